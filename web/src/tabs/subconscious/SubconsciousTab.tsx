/** Seed 1's Subconscious tab with seed 4's per-world cards. */
import { useEffect, useState } from 'react';
import type { LogEntry } from '../../api/types.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { useShell } from '../../shell/context.js';
import { ActiveTasks } from './ActiveTasks.js';
import { ActivityLog } from './ActivityLog.js';
import { Approvals } from './Approvals.js';
import { StatusBar } from './StatusBar.js';
import { WorldCards } from './WorldCards.js';

const TASK_EVENTS = ['tasks.changed', 'tick.finished'] as const;
const LOG_EVENTS = ['tasks.log_changed', 'tick.started', 'tick.finished'] as const;
const ESCALATION_EVENTS = ['tasks.escalation_changed', 'approvals.changed', 'tick.finished'] as const;
/** Newest rows first; "Show older" asks for more, up to what `log_list` allows. */
const LOG_PAGE = 50;
const LOG_MAX = 1000;

const anyInProgress = (rows: LogEntry[]) => rows.some((r) => r.decision === 'in_progress');

export function SubconsciousTab() {
  const { status } = useShell();
  const tasks = useLiveRpc('subconscious.tasks_list', {}, TASK_EVENTS);
  // Seed 1: poll while rows are in_progress (and while a tick runs, before its rows exist) — the
  // poll only runs when the event stream is down.
  const ticking = (status.data?.instances ?? []).some((i) => i.running);
  const [logLimit, setLogLimit] = useState(LOG_PAGE);
  const log = useLiveRpc('subconscious.log_list', { limit: logLimit }, LOG_EVENTS, (rows) => ticking || anyInProgress(rows));
  const moreLog = log.data && log.data.length >= logLimit && logLimit < LOG_MAX ? () => setLogLimit((l) => Math.min(LOG_MAX, l + LOG_PAGE)) : undefined;
  const escalations = useLiveRpc('subconscious.escalations_list', { status: 'pending' }, ESCALATION_EVENTS);
  // A tick starting or finishing changes the lists. The events say so when the stream is up;
  // when it is down, the status poll notices, and this reloads the lists from it.
  const tickKey = (status.data?.instances ?? []).map((i) => `${i.world}:${i.running}:${i.total_ticks}:${i.last_tick_at}:${i.consecutive_failures}`).join('|');
  const { reload: reloadLog } = log;
  const { reload: reloadTasks } = tasks;
  const { reload: reloadEscalations } = escalations;
  useEffect(() => {
    if (!tickKey) return;
    void reloadLog();
    void reloadTasks();
    void reloadEscalations();
  }, [tickKey, reloadLog, reloadTasks, reloadEscalations]);

  return (
    <div className="subconscious">
      <StatusBar tasks={tasks.data} worlds={status.data?.instances} />
      <WorldCards status={status} />
      <div className="columns">
        <div className="column">
          <Approvals escalations={escalations} log={log} />
          <ActiveTasks tasks={tasks} waiting={new Set((escalations.data ?? []).map((e) => e.task_id))} />
        </div>
        <div className="column">
          <ActivityLog log={log} more={moreLog} />
        </div>
      </div>
    </div>
  );
}
