/**
 * Seed 1's status bar: task count, total ticks, last tick time, consecutive failures (if any).
 * Tasks are counted as Active Tasks counts them (not completed, on or off); when some are off it
 * says how many of them are on ("4 of 5 tasks on").
 */
import { useState } from 'react';
import { explain, call } from '../../api/rpc.js';
import type { Task, WorldStatus } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import { count, fullTime, relativeTime } from '../../ui/format.js';

export function StatusBar(props: { tasks: Task[] | undefined; worlds: WorldStatus[] | undefined }) {
  const { notify, status, offlineReason } = useShell();
  const now = useNow(15_000);
  const [busy, setBusy] = useState(false);
  const worlds = props.worlds ?? [];
  const activeTasks = (props.tasks ?? []).filter((t) => !t.completed);
  const onTasks = activeTasks.filter((t) => t.enabled).length;
  const totalTicks = worlds.reduce((a, w) => a + w.total_ticks, 0);
  const failures = worlds.reduce((a, w) => a + w.consecutive_failures, 0);
  const lastTick = worlds.reduce<number | null>((a, w) => (w.last_tick_at !== null && (a === null || w.last_tick_at > a) ? w.last_tick_at : a), null);

  const runAll = async () => {
    setBusy(true);
    try {
      const { skipped } = await call('subconscious.trigger', { world: 'all' });
      const off = skipped.length ? ` Not run (off): ${skipped.map((s) => s.reason).join('; ')}.` : '';
      notify(`A tick was started for every enabled world.${off}`, 'info');
    } catch (err) {
      notify(`Could not start the ticks: ${explain(err)}`, 'error');
    } finally {
      setBusy(false);
      void status.reload();
    }
  };

  return (
    <div className="statusbar" data-testid="status-bar" role="group" aria-label="Summary">
      <span data-testid="status-tasks">
        {props.tasks && onTasks < activeTasks.length ? (
          <>
            <strong>{count(onTasks)}</strong> of {count(activeTasks.length)} {activeTasks.length === 1 ? 'task' : 'tasks'} on
          </>
        ) : (
          <>
            <strong>{props.tasks ? count(activeTasks.length) : '–'}</strong> {activeTasks.length === 1 ? 'task' : 'tasks'}
          </>
        )}
      </span>
      <span data-testid="status-ticks">
        <strong>{count(totalTicks)}</strong> {totalTicks === 1 ? 'tick' : 'ticks'}
      </span>
      <span data-testid="status-last-tick" title={fullTime(lastTick)}>
        last tick <strong>{relativeTime(lastTick, now)}</strong>
      </span>
      {failures > 0 && (
        <span className="coral" data-testid="status-failures">
          <strong>{count(failures)}</strong> failed
        </span>
      )}
      {status.data?.config_file?.error && (
        <span className="coral" data-testid="status-config-error" title={status.data.config_file.error}>
          <strong>subconscious.toml has an error</strong>: still using the last good settings (see Settings)
        </span>
      )}
      <button type="button" className="primary statusbar-run" onClick={runAll} disabled={busy || offlineReason !== null} title={offlineReason ?? undefined}>
        {busy ? 'Starting…' : 'Run all now'}
      </button>
    </div>
  );
}
