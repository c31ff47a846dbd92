/**
 * Seed 1's Subconscious tab with seed 4's per-world cards, explained in plain words (issue 10):
 * what happens here, the model's health from the world's own probe, tasks that each say why
 * they are or are not looked at next, and the log grouped by tick with every row's detail.
 * Approvals are cards under Needs you at the top of the page (issue 23).
 */
import { useEffect, useState } from 'react';
import type { LogGroups } from '../../../../src/protocol/index.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { useShell } from '../../shell/context.js';
import { ActiveTasks } from './ActiveTasks.js';
import { ActivityLog, type LogFilters } from './ActivityLog.js';
import { HealthBanner } from './HealthBanner.js';
import { Intro } from './Intro.js';
import { Settings } from './Settings.js';
import { StatusBar } from './StatusBar.js';
import { WorldCards } from './WorldCards.js';
import { Workers } from './Workers.js';
import './subconscious.css';

const TASK_EVENTS = ['tasks.changed', 'tasks.escalation_changed', 'tasks.health_changed', 'tick.finished'] as const;
const LOG_EVENTS = ['tasks.log_changed', 'tick.started', 'tick.finished'] as const;
const HEALTH_EVENTS = ['tasks.health_changed', 'tick.finished'] as const;
/** Newest ticks first; "Show older ticks" asks for more, up to what `log_ticks` allows. */
const LOG_PAGE = 20;
const LOG_MAX = 100;

const anyInProgress = (log: LogGroups) => log.groups.some((g) => g.lines.some((l) => l.entry.decision === 'in_progress'));

export function SubconsciousTab() {
  const { status } = useShell();
  const tasks = useLiveRpc('subconscious.tasks_list', {}, TASK_EVENTS);
  // Seed 1: poll while rows are in_progress (and while a tick runs, before its rows exist) — the
  // poll only runs when the event stream is down.
  const ticking = (status.data?.instances ?? []).some((i) => i.running);
  const [logLimit, setLogLimit] = useState(LOG_PAGE);
  const [filters, setFilters] = useState<LogFilters>({ decision: '', taskId: '', q: '' });
  const params = {
    limit: logLimit,
    ...(filters.decision ? { decision: filters.decision } : {}),
    ...(filters.taskId ? { task_id: filters.taskId } : {}),
    ...(filters.q.trim() ? { q: filters.q.trim() } : {}),
  };
  const log = useLiveRpc('subconscious.log_ticks', params, LOG_EVENTS, (data) => ticking || anyInProgress(data));
  const moreLog = log.data && log.data.next_before !== null && logLimit < LOG_MAX ? () => setLogLimit((l) => Math.min(LOG_MAX, l + LOG_PAGE)) : undefined;
  const health = useLiveRpc('subconscious.health', {}, HEALTH_EVENTS);
  // A tick starting or finishing changes the lists. The events say so when the stream is up;
  // when it is down, the status poll notices, and this reloads the lists from it.
  const tickKey = (status.data?.instances ?? []).map((i) => `${i.world}:${i.running}:${i.total_ticks}:${i.last_tick_at}:${i.consecutive_failures}`).join('|');
  const { reload: reloadLog } = log;
  const { reload: reloadTasks } = tasks;
  useEffect(() => {
    if (!tickKey) return;
    void reloadLog();
    void reloadTasks();
  }, [tickKey, reloadLog, reloadTasks]);

  const world = status.data?.instances.find((i) => i.world === 'tasks');
  // A first run: nothing of the person's own yet (the defaults and HEARTBEAT.md lines come by themselves).
  const firstRun = !!tasks.data && !tasks.data.some((t) => t.source === 'user');

  return (
    <div className="subconscious">
      <Intro tasks={tasks.data} intervalMinutes={world?.interval_minutes} firstRun={firstRun} />
      <HealthBanner health={health.data} world={world} />
      <StatusBar tasks={tasks.data} worlds={status.data?.instances} />
      <WorldCards status={status} />
      <div className="columns">
        <div className="column">
          <ActiveTasks tasks={tasks} />
        </div>
        <div className="column">
          <ActivityLog log={log} tasks={tasks.data} filters={filters} setFilters={setFilters} more={moreLog} />
        </div>
      </div>
      <Workers cluster={status.data?.cluster} />
      <Settings />
    </div>
  );
}
