/**
 * "Needs you" (issue 23): everything across worlds that waits for a person, as one list of
 * items — approval cards of the tasks world, tool calls held at the approval gate (bots,
 * heartbeat resumes, approved runs), heartbeat check-ins, write rights to confirm, actionables
 * that need confirmation, and worlds that are failing. Pure: the hook feeds it the reads.
 */
import type { Actionable, Approval, Checkin, Escalation, InstanceStatus, Task } from '../../../../src/protocol/index.js';

export type InboxPriority = 'critical' | 'important' | 'normal';
export const PRIORITIES: readonly InboxPriority[] = ['critical', 'important', 'normal'];

export type InboxItem =
  | { kind: 'escalation'; key: string; world: string; tab: string; priority: InboxPriority; at: number; escalation: Escalation }
  | { kind: 'approval'; key: string; world: string; tab: string; priority: InboxPriority; at: number; approval: Approval }
  | {
      kind: 'checkin';
      key: string;
      world: string;
      tab: string;
      priority: InboxPriority;
      at: number;
      checkin: Checkin;
      bot: string | null;
      /** The runtime a bot of your own agent runtime runs in (null: a bot of this page). */
      runtime: string | null;
    }
  | { kind: 'write_rights'; key: string; world: string; tab: string; priority: InboxPriority; at: number; task: Task }
  | { kind: 'actionable'; key: string; world: string; tab: string; priority: InboxPriority; at: number; actionable: Actionable }
  | { kind: 'failing'; key: string; world: string; tab: string; priority: InboxPriority; at: number; instance: InstanceStatus };

export interface InboxSources {
  escalations?: readonly Escalation[] | undefined;
  approvals?: readonly Approval[] | undefined;
  checkins?: readonly Checkin[] | undefined;
  botNames?: ReadonlyMap<string, string> | undefined;
  /** Your runtimes' bots: bot id → its runtime's name. */
  runtimes?: ReadonlyMap<string, string> | undefined;
  tasks?: readonly Task[] | undefined;
  actionables?: readonly Actionable[] | undefined;
  instances?: readonly InstanceStatus[] | undefined;
}

/** The page tab that shows a world's work. */
export function tabOfWorld(world: string, instances?: readonly InstanceStatus[]): string {
  const known = instances?.find((i) => i.world === world)?.tab;
  if (known) return known;
  if (world === 'tasks') return 'subconscious';
  if (world === 'bots' || world === 'heartbeat') return 'bots';
  if (world === 'conscious') return 'actionables';
  return world;
}

const RANK: Record<InboxPriority, number> = { critical: 0, important: 1, normal: 2 };

export function collectInbox(s: InboxSources): InboxItem[] {
  const items: InboxItem[] = [];
  const tab = (w: string) => tabOfWorld(w, s.instances);
  // A tasks card holding a held call is the same decision as its (expired) gate row: one item.
  for (const e of s.escalations ?? []) {
    if (e.status !== 'pending') continue;
    items.push({ kind: 'escalation', key: `esc:${e.id}`, world: 'tasks', tab: tab('tasks'), priority: e.priority, at: e.created_at, escalation: e });
  }
  for (const a of s.approvals ?? []) {
    if (a.state !== 'pending') continue;
    items.push({ kind: 'approval', key: `apr:${a.id}`, world: a.world, tab: tab(a.world), priority: 'important', at: a.created_at, approval: a });
  }
  for (const c of s.checkins ?? []) {
    if (c.state !== 'pending') continue;
    items.push({
      kind: 'checkin',
      key: `chk:${c.id}`,
      world: 'heartbeat',
      tab: 'bots',
      priority: 'normal',
      at: c.created_at,
      checkin: c,
      bot: s.botNames?.get(c.bot_id) ?? null,
      runtime: s.runtimes?.get(c.bot_id) ?? null,
    });
  }
  for (const t of s.tasks ?? []) {
    if (t.write_choice !== 'heartbeat_md' && t.write_choice !== 'older_version') continue;
    items.push({ kind: 'write_rights', key: `wr:${t.id}`, world: 'tasks', tab: tab('tasks'), priority: 'normal', at: t.updated_at, task: t });
  }
  for (const a of s.actionables ?? []) {
    if (a.state !== 'new' || !a.requires_confirmation) continue;
    const priority: InboxPriority = a.priority === 'critical' ? 'critical' : a.priority === 'important' ? 'important' : 'normal';
    items.push({ kind: 'actionable', key: `act:${a.id}`, world: 'conscious', tab: tab('conscious'), priority, at: a.updated_at, actionable: a });
  }
  for (const i of s.instances ?? []) {
    if (!i.enabled || (!i.halted && i.consecutive_failures === 0)) continue;
    items.push({ kind: 'failing', key: `fail:${i.world}`, world: i.world, tab: tab(i.world), priority: 'critical', at: i.last_tick_at ?? 0, instance: i });
  }
  return items.sort((a, b) => RANK[a.priority] - RANK[b.priority] || a.at - b.at);
}

/** Items per tab (the tab bar's badges). */
export function countByTab(items: readonly InboxItem[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(i.tab, (m.get(i.tab) ?? 0) + 1);
  return m;
}

/** The world's name in words. */
export function worldLabel(world: string): string {
  const names: Record<string, string> = {
    tasks: 'Tasks',
    bots: 'Bots',
    heartbeat: 'Heartbeat',
    conscious: 'Actionables',
    memory: 'Memory',
    steering: 'Steering',
  };
  return names[world] ?? world.charAt(0).toUpperCase() + world.slice(1);
}

/** `(3) subconscious` while 3 things wait; the plain name otherwise. */
export function titleWith(count: number, base = 'subconscious'): string {
  return count > 0 ? `(${count}) ${base}` : base;
}
