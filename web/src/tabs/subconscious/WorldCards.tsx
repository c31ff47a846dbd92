/** One card per world (seed 4 phase 7): state, last tick, totals, failures, halt reason, enable, Run now. */
import { describeBackoff } from '../../../../src/protocol/backoff.js';
import { call } from '../../api/rpc.js';
import type { StatusResult, WorldStatus } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot, type DotColor } from '../../ui/Dot.js';
import { count, everyWords, fullTime, hourMinute, relativeTime, worldLabel } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Switch } from '../../ui/Switch.js';
import { optimistic } from './optimistic.js';

export function WorldCards(props: { status: Resource<StatusResult> }) {
  const { status } = props;
  const now = useNow(15_000);
  if (!status.data) {
    return (
      <p className="muted" data-testid="worlds-loading">
        {status.error ? 'The worlds’ status could not be read.' : 'Reading the worlds’ status…'}
      </p>
    );
  }
  if (status.data.instances.length === 0) return <p className="muted">No world is configured in this daemon.</p>;
  return (
    <ul className="world-cards" aria-label="Worlds">
      {status.data.instances.map((w) => (
        <WorldCard key={w.world} world={w} now={now} status={status} />
      ))}
    </ul>
  );
}

function stateOf(w: WorldStatus): { label: string; color: DotColor; pulse?: boolean } {
  if (w.running) return { label: 'Running', color: 'blue', pulse: true };
  if (w.halted) return { label: 'Halted', color: 'coral' };
  if (!w.enabled) return { label: 'Disabled', color: 'gray' };
  if (w.provider_available === false) return { label: 'Model unavailable', color: 'amber' };
  if (w.consecutive_failures > 0) return { label: 'Failing', color: 'coral' };
  return { label: 'Idle', color: 'green' };
}

function patchWorld(data: StatusResult, world: string, patch: Partial<WorldStatus>): StatusResult {
  return { ...data, instances: data.instances.map((i) => (i.world === world ? { ...i, ...patch } : i)) };
}

function WorldCard(props: { world: WorldStatus; now: number; status: Resource<StatusResult> }) {
  const { notify, navigate, offlineReason } = useShell();
  const w = props.world;
  const state = stateOf(w);
  const name = worldLabel(w.world);
  // A world that is off would run nothing: Run now is refused, so the button says why instead.
  const offReason = w.enabled
    ? null
    : w.disabled_by
      ? `it is off in subconscious.toml: switch it on here (that writes enabled = true under [worlds.${w.world}]; no restart)`
      : 'it is switched off: switch it on first';

  // Off in the file: switching it on changes the file's setting, live (the page's own switch cannot override it).
  const setEnabled = (enabled: boolean) =>
    optimistic(
      props.status,
      (d) => patchWorld(d, w.world, enabled ? { enabled, disabled_by: null } : { enabled }),
      () =>
        enabled && w.disabled_by
          ? call('subconscious.config_set', { key: `worlds.${w.world}.enabled`, value: true })
          : call('subconscious.set_enabled', { world: w.world, enabled }),
      `Could not ${enabled ? 'enable' : 'disable'} ${name}`,
      notify,
    );

  const runNow = async () => {
    const ok = await optimistic(
      props.status,
      (d) => patchWorld(d, w.world, { running: true }),
      () => call('subconscious.trigger', { world: w.world }),
      `Could not start a ${name} tick`,
      notify,
    );
    if (ok) notify(`${name}: tick started.`, 'info');
  };

  const tryAgain = async () => {
    const ok = await optimistic(
      props.status,
      (d) => patchWorld(d, w.world, { halted: false, halt_reason: null }),
      () => call('subconscious.clear_halt', { world: w.world }),
      `Could not clear the halt of ${name}`,
      notify,
    );
    if (ok) notify(`${name}: halt cleared; trying again now.`, 'info');
  };

  return (
    <li className={`card world-card${w.halted ? ' world-halted' : ''}`} data-testid={`world-${w.world}`} data-state={state.label}>
      <header className="world-head">
        <h3>{name}</h3>
        <span className="state" data-testid="world-state">
          <Dot color={state.color} pulse={state.pulse} /> {state.label}
        </span>
      </header>
      {w.description && (
        <p className="muted world-note" data-testid="world-description">
          {w.description}
          {w.tab && w.tab !== 'subconscious' && (
            <>
              {' '}
              <button type="button" className="link" onClick={() => navigate(w.tab!)} aria-label={`Open the ${name} tab`}>
                Open
              </button>
            </>
          )}
        </p>
      )}
      <dl className="world-facts">
        <div>
          <dt>Last tick</dt>
          <dd title={fullTime(w.last_tick_at)}>{relativeTime(w.last_tick_at, props.now)}</dd>
        </div>
        <div>
          <dt>Next tick</dt>
          <dd title={fullTime(w.next_tick_at)}>{w.enabled && !w.halted && w.next_tick_at ? relativeTime(w.next_tick_at, props.now) : '—'}</dd>
        </div>
        <div>
          <dt>Total ticks</dt>
          <dd data-testid="world-ticks">{count(w.total_ticks)}</dd>
        </div>
        <div>
          <dt>Failures</dt>
          <dd data-testid="world-failures" className={w.consecutive_failures > 0 ? 'coral' : undefined}>
            {count(w.consecutive_failures)}
          </dd>
        </div>
      </dl>
      {w.halted && (
        <p className="coral world-note" data-testid="world-halt-reason">
          Halted: <MessageText text={w.halt_reason ?? 'no reason recorded'} />
        </p>
      )}
      {w.halted && (
        <button
          type="button"
          onClick={tryAgain}
          aria-label={`Try ${name} again`}
          title="Lift the halt and run a tick now (it halts again if the requests still do not fit)"
        >
          Try again
        </button>
      )}
      {w.disabled_by && (
        <p className="muted world-note" data-testid="world-disabled-by">
          Off: <MessageText text={w.disabled_by} />.
        </p>
      )}
      {w.backoff && (
        <p className="coral world-note" data-testid="world-backoff">
          Waiting: <MessageText text={describeBackoff(w.backoff, hourMinute)} />
        </p>
      )}
      {w.last_summary && !w.halted && (
        <p className="muted world-note">
          <MessageText text={w.last_summary} />
        </p>
      )}
      {offReason && (
        <p className="muted world-note" data-testid="world-run-off">
          Run now is unavailable: {offReason}.
        </p>
      )}
      <footer className="world-actions">
        <span className="switch-label">
          <Switch checked={w.enabled} label={`Enable ${name}`} onChange={setEnabled} disabled={offlineReason !== null} />
          <span aria-hidden="true">{w.enabled ? 'Enabled' : 'Disabled'}</span>
        </span>
        <span className="muted small">{everyWords(w.interval_minutes)}</span>
        <button
          type="button"
          onClick={runNow}
          disabled={w.running || offReason !== null || offlineReason !== null}
          aria-label={`Run ${name} now`}
          title={offlineReason ?? (offReason ? `Cannot run now: ${offReason}` : undefined)}
        >
          {w.running ? 'Running…' : 'Run now'}
        </button>
      </footer>
    </li>
  );
}
