/**
 * The conscious loop's last run (time, items, sources, duration), its last error, when it looks
 * at memory again, and Run now (which reads memory even when it did not change: one model call).
 */
import { useState } from 'react';
import { call, explain } from '../../api/rpc.js';
import type { ConsciousRun, InstanceStatus } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import { Dot, type DotColor } from '../../ui/Dot.js';
import { count, duration, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';

export function RunBar(props: { runs: ConsciousRun[] | undefined; world: InstanceStatus | undefined }) {
  const { notify, status } = useShell();
  const now = useNow(15_000);
  const [busy, setBusy] = useState(false);
  const w = props.world;
  const runs = props.runs ?? [];
  const last = runs[0];
  const lastDone = runs.find((r) => r.status === 'completed');
  // The run record is the fresher word on what the loop is doing: the world's status can still say
  // `running` for a moment after the run row says it failed (they reload on different events).
  const running = last ? last.status === 'running' : w?.running === true;
  const busyWorld = running || w?.running === true;
  const failed = last?.status === 'failed' ? last : undefined;
  const state: { label: string; color: DotColor; pulse?: boolean } = running
    ? { label: 'Reading memory', color: 'blue', pulse: true }
    : w && !w.enabled
      ? { label: 'Off', color: 'gray' }
      : failed
        ? { label: 'Last run failed', color: 'coral' }
        : { label: 'Watching memory', color: 'green' };

  const runNow = async () => {
    setBusy(true);
    try {
      await call('conscious.run', { force: true });
      notify('The conscious loop is reading memory now.', 'info');
    } catch (err) {
      notify(`Could not start a run: ${explain(err)}`, 'error');
    } finally {
      setBusy(false);
      void status.reload();
    }
  };

  return (
    <div className="statusbar run-bar" role="group" aria-label="Conscious loop" data-testid="conscious-run-bar">
      <span className="state" data-testid="conscious-state">
        <Dot color={state.color} pulse={state.pulse} /> {state.label}
      </span>
      {lastDone ? (
        <span data-testid="last-run" title={fullTime(lastDone.finished_at ?? lastDone.started_at)}>
          last run <strong>{relativeTime(lastDone.finished_at ?? lastDone.started_at, now)}</strong>: {count(lastDone.count)} item
          {lastDone.count === 1 ? '' : 's'} ({count(lastDone.new)} new) from {count(lastDone.documents)} document{lastDone.documents === 1 ? '' : 's'}
          {lastDone.duration_ms !== null ? `, ${duration(lastDone.duration_ms)}` : ''}
        </span>
      ) : (
        <span data-testid="last-run">{failed ? 'no run has finished yet' : 'no run yet'}</span>
      )}
      {w && w.last_tick_at !== null && (
        <span title={fullTime(w.last_tick_at)}>
          checked <strong>{relativeTime(w.last_tick_at, now)}</strong>
        </span>
      )}
      <button
        type="button"
        className="primary statusbar-run"
        onClick={() => void runNow()}
        disabled={busy || busyWorld || (w !== undefined && !w.enabled)}
        title="Read memory and extract actionables now, even if nothing changed (one model call)"
      >
        {busy ? 'Starting…' : 'Run now'}
      </button>
      {failed && (
        <p className="coral run-error" role="alert" data-testid="run-error">
          The run {relativeTime(failed.started_at, now)} failed{failed.error_kind ? ` (${failed.error_kind})` : ''}:{' '}
          <MessageText text={failed.error ?? 'no reason recorded'} /> It tries the same memory again at its next run.
        </p>
      )}
      {w?.disabled_by && (
        <p className="muted run-error">
          Off: <MessageText text={w.disabled_by} />.
        </p>
      )}
    </div>
  );
}
