/**
 * The heartbeat's settings (`bots.set_heartbeat_settings`): one bot's own (interval, quiet hours
 * and time zone, pulse model, follow-ups, auto-resume after a restart, its caps) and the store-wide
 * ones (the same without `id`, plus mode, tick, cooldown, concurrency, pulse limits, the day's
 * budgets for all bots; the Settings section on the Subconscious tab shows this form too). A bot's
 * key it has not set is inherited and shown as such; "Use all bots’ value" puts one back (`null`). Only changed keys are sent; a refusal is shown under its field.
 * And what a pulse sends to a model, said plainly (seed 2 §12).
 */
import { useId, useRef, useState, type FormEvent, type ReactNode } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
// Types only: a value from a protocol file other than client.js would bring zod into the page,
// whose Content-Security-Policy refuses the `eval` zod's validators use.
import type { BotHeartbeat, HeartbeatMode, HeartbeatSettings as GlobalSettings, QuietHours } from '../../../../src/protocol/heartbeat.js';
import { call } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { MessageText } from '../../ui/MessageText.js';
import { fieldError } from './errors.js';
import { MODE_TEXT } from './heartbeat-why.js';

type Value = string | boolean | QuietHours;
type FieldKind = 'int' | 'decimal' | 'bool' | 'text' | 'mode' | 'quiet';

interface Field {
  key: string;
  kind: FieldKind;
  label: string;
  hint: string;
  placeholder?: string;
  /** The label and hint in one bot's own form, when they differ (a cap "each bot" has is "this bot"'s there). */
  bot?: { label: string; hint: string };
}

/** A bot may set these for itself (BOT_SETTING_KEYS); the store-wide form has them too. */
const SHARED: Field[] = [
  {
    key: 'interval_seconds',
    kind: 'int',
    label: 'Check interval (seconds)',
    hint: '120–3600. How long it waits between looks at unfinished work; it grows by itself while pulses find nothing to do.',
  },
  {
    key: 'quiet_hours',
    kind: 'quiet',
    label: 'Quiet hours',
    hint: 'From and to as HH:MM, 24-hour, in the time zone below. No pulse and no resume starts then; Check now still works.',
  },
  { key: 'timezone', kind: 'text', label: 'Time zone', hint: 'For quiet hours and the day’s budgets, e.g. Europe/Paris or UTC.', placeholder: 'Europe/Paris' },
  {
    key: 'model',
    kind: 'text',
    label: 'Pulse model',
    hint: 'local, agent, local:<model>, agent:<model>, or a model on the local endpoint. A small model is enough: it only answers idle, wait, resume or ask.',
    placeholder: 'local',
  },
  {
    key: 'max_pulses_per_day',
    kind: 'int',
    label: 'Pulses per day, each bot',
    hint: '1–288 for every bot on its own: small model calls, only when something is unfinished. “All bots together” caps their sum.',
    bot: {
      label: 'Pulses per day, this bot',
      hint: '1–288 small model calls, only when something is unfinished. The cap for all bots together still applies.',
    },
  },
  {
    key: 'max_resumes_per_day',
    kind: 'int',
    label: 'Resumes per day, each bot',
    hint: '0–48 for every bot on its own: full runs that continue unfinished work. “All bots together” caps their sum.',
    bot: { label: 'Resumes per day, this bot', hint: '0–48 full runs that continue unfinished work. The cap for all bots together still applies.' },
  },
  { key: 'max_task_attempts', kind: 'int', label: 'Attempts per task', hint: '1–10 resumes of one task; then it asks you once and stops.' },
  {
    key: 'auto_resume_on_restart',
    kind: 'bool',
    label: 'Resume right after a restart',
    hint: 'A task cut off by a restart, with a checkpoint and no attempts yet, resumes without asking the pulse model first.',
  },
  {
    key: 'follow_ups_enabled',
    kind: 'bool',
    label: 'Follow-ups',
    hint: 'The bot may promise to come back (FOLLOWUP: 10m — …) or say it is blocked (BLOCKED: …); the heartbeat keeps the promise or asks you.',
  },
];

/** Only the store-wide settings have these (GLOBAL_ONLY_KEYS). */
const GLOBAL_ONLY: Field[] = [
  { key: 'mode', kind: 'mode', label: 'Mode', hint: '' },
  { key: 'tick_seconds', kind: 'int', label: 'Tick (seconds)', hint: '15–120. How often the heartbeat looks for bots that are due (no model call).' },
  { key: 'resume_cooldown_seconds', kind: 'int', label: 'Rest after a resume (seconds)', hint: '120–7200 before the bot is checked again.' },
  {
    key: 'global_pulses_per_day',
    kind: 'int',
    label: 'Pulses per day, all bots together',
    hint: 'The sum over every bot, store-wide (resets at local midnight); each bot also stops at its own cap.',
  },
  {
    key: 'global_resumes_per_day',
    kind: 'int',
    label: 'Resumes per day, all bots together',
    hint: 'The sum over every bot, store-wide (resets at local midnight); each bot also stops at its own cap.',
  },
  { key: 'pulse_concurrency', kind: 'int', label: 'Pulses at once', hint: '1–8.' },
  { key: 'resume_concurrency', kind: 'int', label: 'Resumes at once', hint: '1–4.' },
  { key: 'pulse_max_output_tokens', kind: 'int', label: 'Pulse answer cap (tokens)', hint: '80–400.' },
  { key: 'pulse_timeout_seconds', kind: 'decimal', label: 'Pulse timeout (seconds)', hint: '3–30; one attempt, then it counts as a pulse error.' },
];

function valueOf(source: Record<string, unknown>, f: Field): Value {
  const v = source[f.key];
  if (f.kind === 'bool') return v === true;
  if (f.kind === 'quiet') return v as QuietHours;
  return v === null || v === undefined ? '' : String(v);
}

function same(a: Value, b: Value): boolean {
  if (typeof a === 'object' && typeof b === 'object') return a.enabled === b.enabled && a.start === b.start && a.end === b.end;
  return a === b;
}

/** A draft value as the RPC takes it, or the reason it cannot be sent. */
function parse(f: Field, v: Value): { ok: true; value: unknown } | { ok: false; text: string } {
  if (f.kind === 'int' || f.kind === 'decimal') {
    const s = String(v).trim();
    const n = Number(s);
    if (s === '' || !Number.isFinite(n)) return { ok: false, text: 'Give a number.' };
    if (f.kind === 'int' && !Number.isInteger(n)) return { ok: false, text: 'Give a whole number.' };
    return { ok: true, value: n };
  }
  if (f.kind === 'text' || f.kind === 'mode') {
    const s = String(v).trim();
    return s ? { ok: true, value: s } : { ok: false, text: 'This cannot be empty (use the button beside it to go back to the inherited value).' };
  }
  return { ok: true, value: v };
}

interface FormProps {
  /** `id` for one bot; absent for the store-wide settings. */
  botId?: string;
  fields: Field[];
  current: Record<string, unknown>;
  overridden: string[];
  /** Says where an inherited value comes from, for the "put it back" button. */
  inheritLabel: string;
  ownLabel: string;
  what: string;
  onSaved: () => void;
}

function SettingsForm(props: FormProps) {
  const ids = useId();
  const { notify } = useShell();
  const [edits, setEdits] = useState<Record<string, Value>>({});
  const [error, setError] = useState<{ field: string | null; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const formRef = useRef<HTMLFormElement>(null);

  const shown = (f: Field): Value => edits[f.key] ?? valueOf(props.current, f);
  const changed = props.fields.filter((f) => edits[f.key] !== undefined && !same(edits[f.key]!, valueOf(props.current, f)));
  const set = (key: string, v: Value) => {
    setEdits((e) => ({ ...e, [key]: v }));
    setSaved(null);
    if (error?.field === key) setError(null);
  };

  const focusField = (key: string) =>
    requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>(`[data-field="${key}"] :is(input, select)`)?.focus());

  const send = async (params: Record<string, unknown>, done: string) => {
    setBusy(true);
    setError(null);
    try {
      await call('bots.set_heartbeat_settings', { ...(props.botId ? { bot_id: props.botId } : {}), ...params });
      setSaved(done);
      props.onSaved();
      return true;
    } catch (err) {
      const f = fieldError(err);
      const field = f.field !== null && props.fields.some((x) => x.key === f.field) ? f.field : null;
      setError({ field, text: f.text });
      if (field) focusField(field);
      return false;
    } finally {
      setBusy(false);
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (changed.length === 0) {
      setSaved('Nothing changed.');
      return;
    }
    const params: Record<string, unknown> = {};
    for (const f of changed) {
      const p = parse(f, edits[f.key]!);
      if (!p.ok) {
        setError({ field: f.key, text: p.text });
        focusField(f.key);
        return;
      }
      params[f.key] = p.value;
    }
    if (await send(params, `Saved ${changed.map((f) => f.label.toLowerCase()).join(', ')}.`)) {
      setEdits({});
      notify(`Heartbeat settings saved for ${props.what}.`);
    }
  };

  const inherit = async (f: Field) => {
    if (await send({ [f.key]: null }, `${f.label}: back to ${props.inheritLabel}.`)) {
      setEdits(({ [f.key]: _dropped, ...rest }) => rest);
    }
  };

  const errorId = `${ids}-error`;
  return (
    <form ref={formRef} className="hb-form" onSubmit={(e) => void submit(e)} aria-label={`Heartbeat settings for ${props.what}`} noValidate>
      {props.fields.map((f) => {
        const own = props.overridden.includes(f.key);
        const fieldId = `${ids}-${f.key}`;
        const hintId = `${fieldId}-hint`;
        const bad = error !== null && error.field === f.key;
        const describedBy = [hintId, bad ? errorId : undefined].filter(Boolean).join(' ');
        return (
          <div key={f.key} className="hb-field" data-field={f.key} data-testid={`hb-field-${f.key}`}>
            <FieldControl field={f} id={fieldId} value={shown(f)} invalid={bad} describedBy={describedBy} onChange={(v) => set(f.key, v)} />
            <p id={hintId} className="muted small hb-hint">
              {f.kind === 'mode' ? MODE_TEXT[shown(f) as HeartbeatMode]?.explain : f.hint}{' '}
              {own ? <span className="hb-own">({props.ownLabel})</span> : <span>({props.inheritLabel})</span>}
            </p>
            {own && (
              <button type="button" className="link small hb-inherit" onClick={() => void inherit(f)} disabled={busy}>
                Use {props.inheritLabel} for {f.label.toLowerCase()}
              </button>
            )}
            {bad && (
              <p id={errorId} className="coral small hb-form-error" role="alert" data-testid="heartbeat-settings-error" data-field={f.key}>
                <MessageText text={error.text} />
              </p>
            )}
          </div>
        );
      })}
      {error && error.field === null && (
        <p id={errorId} className="coral small hb-form-error" role="alert" data-testid="heartbeat-settings-error" data-field="">
          <MessageText text={error.text} />
        </p>
      )}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        {changed.length > 0 && (
          <button
            type="button"
            onClick={() => {
              setEdits({});
              setError(null);
            }}
          >
            Discard changes
          </button>
        )}
        <span className="muted small" role="status" data-testid="heartbeat-settings-status">
          {saved ?? (changed.length > 0 ? `${changed.length} unsaved change${changed.length === 1 ? '' : 's'}` : '')}
        </span>
      </div>
    </form>
  );
}

/** A local time as the daemon takes it (`HH:MM`, 24 h): plain text, one Tab stop, the same in every locale. */
const time = (id: string) => ({ id, type: 'text', inputMode: 'numeric' as const, maxLength: 5, placeholder: 'HH:MM', spellCheck: false, className: 'hb-time' });

function FieldControl(props: { field: Field; id: string; value: Value; invalid: boolean; describedBy: string; onChange: (v: Value) => void }) {
  const { field: f, id, value } = props;
  const aria = { 'aria-invalid': props.invalid, 'aria-describedby': props.describedBy };
  if (f.kind === 'bool') {
    return (
      <label className="checkbox hb-check" htmlFor={id}>
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => props.onChange(e.target.checked)} {...aria} />
        <span>{f.label}</span>
      </label>
    );
  }
  if (f.kind === 'quiet') {
    const q = value as QuietHours;
    return (
      <fieldset className="hb-quiet" aria-describedby={props.describedBy}>
        <legend>{f.label}</legend>
        <label className="checkbox hb-check" htmlFor={id}>
          <input
            id={id}
            type="checkbox"
            checked={q.enabled}
            onChange={(e) => props.onChange({ ...q, enabled: e.target.checked })}
            aria-invalid={props.invalid}
          />
          <span>Keep quiet hours</span>
        </label>
        <span className="hb-quiet-times">
          <label htmlFor={`${id}-start`}>from</label>
          <input {...time(`${id}-start`)} value={q.start} onChange={(e) => props.onChange({ ...q, start: e.target.value })} aria-invalid={props.invalid} />
          <label htmlFor={`${id}-end`}>to</label>
          <input {...time(`${id}-end`)} value={q.end} onChange={(e) => props.onChange({ ...q, end: e.target.value })} aria-invalid={props.invalid} />
        </span>
      </fieldset>
    );
  }
  let control: ReactNode;
  if (f.kind === 'mode') {
    control = (
      <select id={id} value={String(value)} onChange={(e) => props.onChange(e.target.value)} {...aria}>
        {(Object.keys(MODE_TEXT) as HeartbeatMode[]).map((m) => (
          <option key={m} value={m}>
            {MODE_TEXT[m].label}
          </option>
        ))}
      </select>
    );
  } else {
    const numeric = f.kind === 'int' || f.kind === 'decimal';
    control = (
      <input
        id={id}
        type={numeric ? 'number' : 'text'}
        inputMode={numeric ? (f.kind === 'int' ? 'numeric' : 'decimal') : undefined}
        step={f.kind === 'decimal' ? 'any' : numeric ? 1 : undefined}
        spellCheck={false}
        placeholder={f.placeholder}
        value={String(value)}
        onChange={(e) => props.onChange(e.target.value)}
        {...aria}
      />
    );
  }
  return (
    <>
      <label htmlFor={id} className="hb-label">
        {f.label}
      </label>
      {control}
    </>
  );
}

export function BotHeartbeatSettings(props: { bot: BotWithStatus; hb: BotHeartbeat; onSaved: () => void }) {
  const { bot, hb } = props;
  return (
    <details className="hb-disclosure" data-testid="heartbeat-bot-settings">
      <summary>Settings for @{bot.name}</summary>
      <SettingsForm
        botId={bot.id}
        fields={SHARED.map((f) => (f.bot ? { ...f, ...f.bot } : f))}
        current={hb as unknown as Record<string, unknown>}
        overridden={hb.overridden}
        inheritLabel="all bots’ value"
        ownLabel={`set for @${bot.name}`}
        what={`@${bot.name}`}
        onSaved={props.onSaved}
      />
    </details>
  );
}

/** The store-wide form; the Settings section shows it open under its own summary (`summary`, `open`). */
export function GlobalHeartbeatSettings(props: { settings: GlobalSettings; onSaved: () => void; summary?: string; open?: boolean }) {
  return (
    <details className="hb-disclosure" data-testid="heartbeat-global-settings" open={props.open}>
      <summary>{props.summary ?? 'Settings for all bots'}</summary>
      <p className="muted small" data-testid="heartbeat-settings-where">
        Every bot uses these unless it sets its own. They are kept in the database, for the whole cluster: every worker on it uses a change at once. They start
        from <code>[worlds.heartbeat]</code> in <code>subconscious.toml</code>; a change here wins until it is put back.
      </p>
      <SettingsForm
        fields={[...GLOBAL_ONLY, ...SHARED]}
        current={props.settings as unknown as Record<string, unknown>}
        overridden={props.settings.overridden}
        inheritLabel="the config file’s value"
        ownLabel="changed here"
        what="all bots"
        onSaved={props.onSaved}
      />
    </details>
  );
}

/** Seed 2 §12: the settings must say that a compact state summary goes to the pulse model. */
export function PulseDisclosure(props: { bot: BotWithStatus; model: string }) {
  return (
    <p className="small hb-disclosure-text" data-testid="heartbeat-disclosure">
      <strong>What is sent:</strong> when a check finds unfinished work, a compact summary of @{props.bot.name}’s state — its last messages shortened, task
      titles, errors and checkpoints — is sent to the pulse model (<code>{props.model}</code>). Nothing is sent while nothing is unfinished. The log keeps the
      verdict and its reason, never the summary.
    </p>
  );
}
