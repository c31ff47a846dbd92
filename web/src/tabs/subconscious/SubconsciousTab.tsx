/** Seed 1's Subconscious tab with seed 4's per-world cards. */
import type { Escalation, LogEntry, Task } from '../../api/types.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { useShell } from '../../shell/context.js';
import { ActiveTasks } from './ActiveTasks.js';
import { ActivityLog } from './ActivityLog.js';
import { Approvals } from './Approvals.js';
import { StatusBar } from './StatusBar.js';
import { WorldCards } from './WorldCards.js';

const TASK_EVENTS = ['tasks.changed', 'tick.finished'];
const LOG_EVENTS = ['tasks.log_changed', 'tick.started', 'tick.finished'];
const ESCALATION_EVENTS = ['tasks.escalation_changed', 'approvals.changed', 'tick.finished'];
const LOG_LIMIT = 50;

const anyInProgress = (rows: LogEntry[]) => rows.some((r) => r.decision === 'in_progress');

export function SubconsciousTab() {
  const { status } = useShell();
  const tasks = useLiveRpc<Task[]>('subconscious.tasks_list', {}, TASK_EVENTS);
  const log = useLiveRpc<LogEntry[]>('subconscious.log_list', { limit: LOG_LIMIT }, LOG_EVENTS, anyInProgress);
  const escalations = useLiveRpc<Escalation[]>('subconscious.escalations_list', { status: 'pending' }, ESCALATION_EVENTS);
  return (
    <div className="subconscious">
      <StatusBar tasks={tasks.data} worlds={status.data?.instances} />
      <WorldCards status={status} />
      <div className="columns">
        <div className="column">
          <Approvals escalations={escalations} log={log} />
          <ActiveTasks tasks={tasks} />
        </div>
        <div className="column">
          <ActivityLog log={log} />
        </div>
      </div>
    </div>
  );
}
