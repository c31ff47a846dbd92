/**
 * A bot's routines: scheduled prompts (cron, in a time zone). Each due slot gives the bot new
 * work (a task in its thread); a slot that comes while the last one still runs is skipped, and
 * a sleep never makes a burst. Add with a cron expression and a prompt; switch off; remove.
 */
import { useId, useState, type FormEvent } from 'react';
import type { BotWithStatus, Routine } from '../../../../src/protocol/bots.js';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { Switch } from '../../ui/Switch.js';
import { fieldError } from './errors.js';
import { cronInWords } from '../../ui/cron-words.js';

const EVENTS = ['bots.routine_changed', 'bots.routine_fired'] as const;

export function Routines(props: { bot: BotWithStatus }) {
  const { bot } = props;
  const routines = useLiveRpc('bots.routines_list', { bot_id: bot.id }, EVENTS);
  const now = useNow(30_000);
  const list = routines.data ?? [];
  return (
    <Section id="bot-routines" title="Routines" count={routines.data ? list.length : undefined}>
      <p className="muted small">Work @{bot.name} does on a schedule, as if you had asked it then. Routine runs are unattended: their approvals expire.</p>
      {routines.error !== undefined && (
        <p className="coral small">
          The routines could not be read: <MessageText text={explain(routines.error)} />
        </p>
      )}
      {list.length > 0 && (
        <ul className="routine-list" data-testid="routine-list">
          {list.map((r) => (
            <RoutineRow key={r.id} routine={r} now={now} />
          ))}
        </ul>
      )}
      <AddRoutine bot={bot} onAdded={() => void routines.reload()} />
    </Section>
  );
}

function RoutineRow(props: { routine: Routine; now: number }) {
  const r = props.routine;
  const { notify } = useShell();
  const update = async (enabled: boolean) => {
    try {
      await call('bots.routines_update', { id: r.id, enabled });
    } catch (err) {
      notify(`Could not ${enabled ? 'switch on' : 'switch off'} the routine: ${explain(err)}`, 'error');
    }
  };
  const remove = async () => {
    try {
      await call('bots.routines_remove', { id: r.id });
    } catch (err) {
      notify(`Could not remove the routine: ${explain(err)}`, 'error');
    }
  };
  return (
    <li className="routine-row" data-testid="routine-row" data-routine-id={r.id}>
      <div className="routine-main">
        <p className="routine-prompt">{r.prompt}</p>
        <p className="muted small">
          {cronInWords(r.schedule) ? `${cronInWords(r.schedule)} ` : ''}
          <code>{r.schedule}</code> ({r.timezone}) ·{' '}
          {r.enabled ? <span title={fullTime(r.next_run_at)}>next {relativeTime(r.next_run_at, props.now)}</span> : 'off'}
          {r.last_outcome && r.last_run_at ? ` · last ${relativeTime(r.last_run_at, props.now)}: ${r.last_outcome}` : ''}
        </p>
      </div>
      <div className="routine-controls">
        <Switch checked={r.enabled} label={`Routine “${r.prompt.slice(0, 40)}” on`} onChange={(v) => void update(v)} />
        <button type="button" className="link small" onClick={() => void remove()} aria-label={`Remove the routine “${r.prompt.slice(0, 40)}”`}>
          Remove
        </button>
      </div>
    </li>
  );
}

function AddRoutine(props: { bot: BotWithStatus; onAdded: () => void }) {
  const ids = useId();
  const [schedule, setSchedule] = useState('');
  const [prompt, setPrompt] = useState('');
  const [error, setError] = useState<{ field: 'schedule' | 'prompt' | null; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!schedule.trim()) return setError({ field: 'schedule', text: 'Give a cron expression, e.g. `0 9 * * 1-5` (weekdays at 9:00).' });
    if (!prompt.trim()) return setError({ field: 'prompt', text: 'Say what the bot should do each time.' });
    setBusy(true);
    setError(null);
    try {
      await call('bots.routines_add', { bot_id: props.bot.id, schedule: schedule.trim(), prompt: prompt.trim() });
      setSchedule('');
      setPrompt('');
      props.onAdded();
    } catch (err) {
      const f = fieldError(err);
      setError({ field: f.field === 'schedule' || f.field === 'prompt' ? f.field : null, text: f.text });
    } finally {
      setBusy(false);
    }
  };
  const described = (field: 'schedule' | 'prompt', own?: string) =>
    [own, error && (error.field === field || error.field === null) ? `${ids}-error` : undefined].filter(Boolean).join(' ') || undefined;

  return (
    <form className="routine-add" onSubmit={(e) => void submit(e)} aria-label={`Add a routine for @${props.bot.name}`} noValidate>
      <div className="routine-add-fields">
        <span className="field-stack">
          <label htmlFor={`${ids}-cron`}>Cron</label>
          <input
            id={`${ids}-cron`}
            type="text"
            className="cron-input"
            placeholder="0 9 * * 1-5"
            value={schedule}
            spellCheck={false}
            onChange={(e) => setSchedule(e.target.value)}
            aria-invalid={error?.field === 'schedule'}
            aria-describedby={described('schedule', `${ids}-cron-help`)}
          />
          <span id={`${ids}-cron-help`} className="visually-hidden">
            Five fields: minute, hour, day of month, month, day of week.
          </span>
        </span>
        <span className="field-stack routine-prompt-field">
          <label htmlFor={`${ids}-prompt`}>Prompt</label>
          <input
            id={`${ids}-prompt`}
            type="text"
            placeholder="Summarise yesterday’s tickets"
            value={prompt}
            maxLength={4000}
            onChange={(e) => setPrompt(e.target.value)}
            aria-invalid={error?.field === 'prompt'}
            aria-describedby={described('prompt')}
          />
        </span>
        <button type="submit" disabled={busy}>
          Add routine
        </button>
      </div>
      {error && (
        <p id={`${ids}-error`} className="coral small" role="alert" data-testid="routine-error" data-field={error.field ?? ''}>
          <MessageText text={error.text} />
        </p>
      )}
    </form>
  );
}
