/** The reads behind "Needs you", each kept live by its events; a world that is not running simply adds nothing. */
import { useMemo } from 'react';
import { UnreachableError } from '../../api/rpc.js';
import { useShell } from '../context.js';
import { useLiveRpc } from '../hooks.js';
import { collectAnswered, type AnsweredItem } from './answered.js';
import { collectInbox, type InboxItem } from './items.js';

const ESCALATION_EVENTS = ['tasks.escalation_changed', 'tick.finished'] as const;
const APPROVAL_EVENTS = ['approvals.changed'] as const;
const CHECKIN_EVENTS = ['heartbeat.checkin_changed', 'bots.bot_changed'] as const;
const TASK_EVENTS = ['tasks.changed'] as const;
const EXTERNAL_EVENTS = ['runtime.changed'] as const;
const ACTIONABLE_EVENTS = ['conscious.actionables_changed'] as const;

export interface InboxData {
  items: InboxItem[];
  /** Escalations and check-ins a person answered lately, newest first, each with how. */
  answered: AnsweredItem[];
  /** Every source answered at least once (a count of 0 means nothing waits; until then the count shows "…"). */
  ready: boolean;
  reload(): void;
}

export function useInbox(): InboxData {
  const { status } = useShell();
  // Pending and answered alike: the pending ones wait here, the answered ones say how they were answered.
  const escalations = useLiveRpc('subconscious.escalations_list', {}, ESCALATION_EVENTS);
  const approvals = useLiveRpc('approvals.list', { state: 'pending' }, APPROVAL_EVENTS);
  const heartbeat = useLiveRpc('bots.heartbeat_snapshot', {}, CHECKIN_EVENTS);
  const bots = useLiveRpc('bots.list', {}, CHECKIN_EVENTS);
  // Your own runtimes' bots ask too (a BLOCKED: line): their check-ins carry their names.
  const external = useLiveRpc('runtime.bots', {}, EXTERNAL_EVENTS);
  const tasks = useLiveRpc('subconscious.tasks_list', {}, TASK_EVENTS);
  const actionables = useLiveRpc('conscious.list', { state: 'new' }, ACTIONABLE_EVENTS);
  const botNames = useMemo(
    () =>
      new Map([
        ...(bots.data ?? []).map((b) => [b.id, b.label || b.name] as const),
        ...(external.data ?? []).map((b) => [b.subconscious_id, `${b.label || b.name} (in ${b.runtime_name})`] as const),
      ]),
    [bots.data, external.data],
  );
  const items = useMemo(
    () =>
      collectInbox({
        escalations: escalations.data,
        approvals: approvals.data?.approvals,
        checkins: heartbeat.data?.checkins,
        botNames,
        runtimes: new Map((external.data ?? []).map((b) => [b.subconscious_id, b.runtime_name] as const)),
        tasks: tasks.data,
        actionables: actionables.data,
        instances: status.data?.instances,
      }),
    [escalations.data, approvals.data, heartbeat.data, botNames, external.data, tasks.data, actionables.data, status.data],
  );
  const answered = useMemo(
    () => collectAnswered({ escalations: escalations.data, checkins: heartbeat.data?.answered_checkins, botNames }),
    [escalations.data, heartbeat.data, botNames],
  );
  const sources = [escalations, approvals, heartbeat, tasks, actionables];
  return {
    items,
    answered,
    // A source the daemon refused (a world not configured) adds nothing; one it never answered leaves the count unknown.
    ready: sources.every((r) => r.data !== undefined || (r.error !== undefined && !(r.error instanceof UnreachableError))),
    reload: () => {
      for (const r of sources) void r.reload();
    },
  };
}
