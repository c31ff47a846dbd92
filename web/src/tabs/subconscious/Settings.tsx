/**
 * The effective configuration (issue 23 §8), from `subconscious.config`: every value the daemon
 * runs with, where it came from (its default, the file, the environment, the command line), and
 * for the ones that change without a restart, where to change them. Secrets show only as set.
 *
 * The settings the daemon takes live (`editable`: a world's interval, its budgets) are fields on
 * top: Save sends `subconscious.config_set`, which checks the value (a refusal is shown under the
 * field, and nothing changed), writes it to subconscious.toml and applies it at once; an interval
 * field shows the world's next tick, which moves. The full list is collapsed until opened; a
 * filter narrows it by key or value. A value the environment set is said to be so, with why the
 * page cannot change it. The heartbeat's settings, kept in the database for the whole cluster,
 * are here too (the Bots tab's form and RPC).
 */
import { useId, useState, type FormEvent } from 'react';
import type { ConfigSource, ConfigValue, InstanceStatus } from '../../../../src/protocol/index.js';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { clockTime, fullTime, relativeTime, worldLabel } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { HeartbeatSettingsPanel } from './HeartbeatSettingsPanel.js';

const CONFIG_EVENTS = ['config.changed', 'config.file'] as const;
const SOURCE_WORDS: Record<ConfigSource, string> = {
  default: 'default',
  file: 'subconscious.toml',
  environment: 'environment variable',
  'command line': 'command line',
};

function valueText(v: ConfigValue): string {
  if (typeof v.value === 'string') return v.value;
  return JSON.stringify(v.value);
}

/** What a setting the page changes does, in words (by its key within the world's section). */
const FIELD_WORDS: Record<string, { label: (world: string) => string; hint: string }> = {
  enabled: { label: (w) => `${w}: on`, hint: 'Off: the world stops ticking at once (its switch on the card follows); on: it ticks now.' },
  interval_minutes: { label: (w) => `${w}: minutes between looks`, hint: 'How long the world waits after a tick before the next one.' },
  inference_enabled: { label: (w) => `${w}: the model decides about tasks`, hint: 'Off: tasks are not looked at by the model (nothing is run).' },
  context_budget_tokens: { label: (w) => `${w}: context budget (tokens)`, hint: 'The most text, in tokens, one tick sends to the model.' },
  reevaluate_unchanged_after_minutes: {
    label: (w) => `${w}: look again at an unchanged task after (minutes)`,
    hint: 'A task whose inputs did not change is skipped until then (0: never skipped).',
  },
  max_output_tokens: { label: (w) => `${w}: answer cap (tokens)`, hint: 'The longest answer the model may give.' },
};

function parts(key: string): { world: string; setting: string } {
  const [, world = '', setting = key] = /^worlds\.([^.]+)\.(.+)$/.exec(key) ?? [];
  return { world, setting };
}

function LiveField(props: { value: ConfigValue; world: InstanceStatus | undefined; now: number }) {
  const { offlineReason } = useShell();
  const id = useId();
  const v = props.value;
  const { world, setting } = parts(v.key);
  const words = FIELD_WORDS[setting];
  const isBool = typeof v.value === 'boolean';
  const [draft, setDraft] = useState<string | null>(null);
  const [state, setState] = useState<{ busy: boolean; error: string | null; saved: boolean }>({ busy: false, error: null, saved: false });
  const text = draft ?? String(v.value);
  const changed = isBool ? false : text.trim() !== String(v.value);
  const save = async (next: number | boolean) => {
    setState({ busy: true, error: null, saved: false });
    try {
      await call('subconscious.config_set', { key: v.key, value: next });
      setDraft(null);
      setState({ busy: false, error: null, saved: true });
    } catch (err) {
      setState({ busy: false, error: explain(err), saved: false });
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const n = Number(text.trim());
    if (text.trim() === '' || !Number.isFinite(n)) {
      setState({ busy: false, error: `${v.key}: must be a number (got “${text}”); nothing was changed.`, saved: false });
      return;
    }
    void save(n);
  };
  const label = words ? words.label(worldLabel(world)) : v.key;
  return (
    <form className="live-setting" data-testid="live-setting" data-key={v.key} onSubmit={submit} aria-describedby={`${id}-hint`}>
      <label htmlFor={`${id}-input`} className="live-setting-label">
        {label}
      </label>
      <div className="live-setting-control">
        {isBool ? (
          <input
            id={`${id}-input`}
            type="checkbox"
            checked={v.value === true}
            disabled={state.busy || offlineReason !== null}
            title={offlineReason ?? undefined}
            onChange={(e) => void save(e.target.checked)}
          />
        ) : (
          <>
            <input
              id={`${id}-input`}
              inputMode="decimal"
              value={text}
              size={8}
              aria-invalid={state.error !== null}
              aria-errormessage={state.error ? `${id}-error` : undefined}
              onChange={(e) => {
                setDraft(e.target.value);
                setState((s) => ({ ...s, saved: false }));
              }}
            />
            <button type="submit" disabled={!changed || state.busy || offlineReason !== null} title={offlineReason ?? undefined}>
              {state.busy ? 'Saving…' : 'Save'}
            </button>
          </>
        )}
      </div>
      <p id={`${id}-hint`} className="small muted live-setting-hint">
        {words?.hint ?? ''} {v.source === 'default' ? 'Now the default' : `Set in ${SOURCE_WORDS[v.source]}`}
        {setting === 'interval_minutes' && props.world?.enabled && props.world.next_tick_at !== null && (
          <>
            {'; '}
            <span data-testid="next-tick" title={fullTime(props.world.next_tick_at)} data-at={props.world.next_tick_at}>
              next tick {relativeTime(props.world.next_tick_at, props.now)} (at {clockTime(props.world.next_tick_at, props.now)})
            </span>
          </>
        )}
        .
      </p>
      {state.error && (
        <p id={`${id}-error`} className="coral small" role="alert" data-testid="live-setting-error">
          <MessageText text={state.error} />
        </p>
      )}
      {state.saved && (
        <p className="small saved-text" role="status" data-testid="live-setting-saved">
          Saved to subconscious.toml and in effect now, on every worker.
        </p>
      )}
    </form>
  );
}

/** Where a value can be changed, for the table's last column. */
function changeWords(v: ConfigValue) {
  if (v.editable) return 'above, on this page';
  if (v.source === 'environment')
    return 'set by an environment variable, which wins over subconscious.toml: change it where the daemon is started, then restart';
  if (v.source === 'command line') return 'set on the command line, which wins over subconscious.toml: start the daemon without it or with a new value';
  return v.live ?? <span className="muted">restart after editing</span>;
}

export function Settings() {
  const config = useLiveRpc('subconscious.config', {}, CONFIG_EVENTS);
  const { status } = useShell();
  const now = useNow(15_000);
  const [q, setQ] = useState('');
  const values = config.data?.values ?? [];
  const needle = q.trim().toLowerCase();
  const shown = needle ? values.filter((v) => v.key.toLowerCase().includes(needle) || valueText(v).toLowerCase().includes(needle)) : values;
  const own = values.filter((v) => v.source !== 'default').length;
  return (
    <Section id="settings" title="Settings">
      {!config.data && (
        <p className={config.error ? 'coral' : 'muted'}>
          {config.error ? <MessageText text={`The configuration could not be read: ${explain(config.error)}`} /> : 'Reading the configuration…'}
        </p>
      )}
      {config.data?.file_error && (
        <div className="settings-file-error" role="alert" data-testid="config-file-error">
          <p>
            <strong>subconscious.toml has an error:</strong> <MessageText text={config.data.file_error} />
          </p>
          <p className="small">The daemon is still using the last good settings. Fix the file and save it: it is read again at once.</p>
        </div>
      )}
      {config.data && config.data.needs_restart.length > 0 && (
        <p className="settings-restart small" role="status" data-testid="config-needs-restart">
          subconscious.toml changes {config.data.needs_restart.length === 1 ? 'a setting' : 'settings'} that need a restart:{' '}
          {config.data.needs_restart.map((k, i) => (
            <span key={k}>
              {i > 0 && ', '}
              <code>{k}</code>
            </span>
          ))}
          . The daemon runs with the old {config.data.needs_restart.length === 1 ? 'value' : 'values'} until it is restarted.
        </p>
      )}
      {config.data && values.some((v) => v.editable) && (
        <div className="live-settings" data-testid="live-settings">
          <h3 className="settings-where">Kept in subconscious.toml</h3>
          <p className="small muted">
            These change now, without a restart: Save writes the value to subconscious.toml (its comments stay) and the daemon uses it at once; other workers on
            the same database take it too, each into its own file.
          </p>
          {values
            .filter((v) => v.editable)
            .map((v) => (
              <LiveField key={v.key} value={v} world={status.data?.instances.find((i) => i.world === parts(v.key).world)} now={now} />
            ))}
        </div>
      )}
      <h3 className="settings-where">Kept in the database, for the whole cluster</h3>
      <HeartbeatSettingsPanel />
      {config.data && (
        <details className="settings" data-testid="settings-details">
          <summary data-testid="settings-summary">
            {values.length} values, {own} of them set by you
            {config.data.file ? (
              <>
                {' '}
                (from <code>{config.data.file}</code>)
              </>
            ) : (
              ' (no subconscious.toml: the rest are defaults)'
            )}
          </summary>
          <p className="small muted">
            A hand edit of the file is read when it is saved: what can change live applies at once, the rest at the next start. The last column says where a
            value changes without a restart; a value set by a <code>SUBCONSCIOUS_*</code> environment variable wins over the file, so it is changed where the
            daemon is started.
          </p>
          <label className="settings-filter">
            Filter{' '}
            <input type="search" value={q} onChange={(e) => setQ(e.target.value)} placeholder="models, heartbeat, interval…" aria-label="Filter the settings" />
          </label>
          <div className="table-wrap">
            <table className="data-table settings-table" data-testid="settings-table">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Value</th>
                  <th scope="col">From</th>
                  <th scope="col">Change it</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((v) => (
                  <tr key={v.key} data-key={v.key} data-source={v.source} data-testid="setting">
                    <th scope="row">
                      <code>{v.key}</code>
                    </th>
                    <td className="settings-value" data-label="Value">
                      {v.secret ? <em>set (not shown)</em> : <code>{valueText(v)}</code>}
                    </td>
                    <td data-label="From">{SOURCE_WORDS[v.source]}</td>
                    <td className="small" data-label="Change it">
                      {changeWords(v)}
                    </td>
                  </tr>
                ))}
                {shown.length === 0 && (
                  <tr>
                    <td colSpan={4} className="muted">
                      No setting matches “{q}”.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </Section>
  );
}
