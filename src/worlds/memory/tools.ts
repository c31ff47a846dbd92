/**
 * The decision agent's tool surface (seed 4's memory profile) — these, nothing else:
 *
 *   memory_diff   what changed since the baseline (one source in detail, with excerpts)
 *   notify_user   a notification for the user (thread `subconscious:user`: the Memory tab, and the Bots tab's Subconscious thread)
 *   update_task   add a to-do, or update one (title, note, status)
 *   goals_list / goals_add / goals_edit
 *   delegate      propose handing a to-do to a bot (only when the bots host runs): stored pending;
 *                 it becomes the bot's task only when a person accepts it (delegations.ts)
 *
 * None has an external effect: each reads memory or this world's own tables, and the writes are
 * staged in the tick and applied by commit to this world's tables. `notify_user` reaches only the
 * user's notifications inside this app; nothing here sends, posts or contacts anyone. So every tool
 * is declared `access: 'read'` (no approval in a tainted tick), which is the truth of what it
 * does — isolation (DESIGN invariant 6) holds because the surface has no outward tool at all.
 */
import { z } from 'zod';
import { defineLocalTool, type LocalTool } from '../../agent/local-tools.js';
import type { IdGen } from '../../core/ids.js';
import { cleanLine } from '../../llm/fence.js';
import {
  GOAL_STATUSES,
  NOTIFICATION_PRIORITIES,
  TODO_STATUSES,
  type MemoryBaseline,
  type MemoryDocument,
  type MemoryGoal,
  type MemoryTodo,
} from '../../protocol/memory.js';
import type { MemoryDiff } from '../../memory/diff.js';
import type { StagedOp } from './outputs.js';

/** The tools it always has; `DELEGATE_TOOL_NAME` joins them when the bots host runs. */
export const MEMORY_TOOL_NAMES = ['memory_diff', 'notify_user', 'update_task', 'goals_list', 'goals_add', 'goals_edit'] as const;
export const DELEGATE_TOOL_NAME = 'delegate';

/** Per reflection: the agent may not flood the user or the lists. */
export const MAX_NOTIFICATIONS_PER_TICK = 3;
export const MAX_TODO_CHANGES_PER_TICK = 10;
export const MAX_GOAL_CHANGES_PER_TICK = 5;
export const MAX_DELEGATIONS_PER_TICK = 3;
const EXCERPT_CHARS = 600;

export interface ToolMemory {
  diffSince(since: MemoryBaseline, opts: { entriesPerNamespace: number }): Promise<MemoryDiff>;
  getDocument(namespace: string, externalId: string): Promise<MemoryDocument | undefined>;
}

export interface ToolOutputs {
  todos(): Promise<MemoryTodo[]>;
  goals(): Promise<MemoryGoal[]>;
}

export interface ToolSession {
  tools: LocalTool[];
  /** What the run asked for, in order: applied by commit. */
  staged: StagedOp[];
}

const text = (max: number) =>
  z
    .string()
    .overwrite((t) => cleanLine(t, max))
    .min(1, 'must not be empty');

/** The bots a to-do may go to (absent: no bots host, so no `delegate` tool). */
export type ToolBots = () => Promise<{ id: string; name: string; label: string; description: string }[]>;

export function memoryTools(deps: {
  memory: ToolMemory;
  outputs: ToolOutputs;
  ids: IdGen;
  baseline: MemoryBaseline;
  rendered: string;
  bots?: ToolBots | undefined;
}): ToolSession {
  const staged: StagedOp[] = [];
  const count = (ops: StagedOp['op'][]) => staged.filter((s) => ops.includes(s.op)).length;

  /** Stored to-dos with this tick's staged changes applied (so the agent sees its own edits). */
  const todos = async (): Promise<MemoryTodo[]> => {
    const list = await deps.outputs.todos();
    for (const s of staged) {
      if (s.op === 'todo_add') list.push({ id: s.id, title: s.title, note: s.note, status: 'open', created_at: 0, updated_at: 0 });
      if (s.op === 'todo_update') {
        const t = list.find((x) => x.id === s.id);
        if (t) Object.assign(t, definedOnly({ title: s.title, note: s.note, status: s.status }));
      }
    }
    return list;
  };
  const goals = async (): Promise<MemoryGoal[]> => {
    const list = await deps.outputs.goals();
    for (const s of staged) {
      if (s.op === 'goal_add') list.push({ id: s.id, title: s.title, description: s.description, status: 'active', created_at: 0, updated_at: 0 });
      if (s.op === 'goal_edit') {
        const g = list.find((x) => x.id === s.id);
        if (g) Object.assign(g, definedOnly({ title: s.title, description: s.description, status: s.status }));
      }
    }
    return list;
  };

  const tools: LocalTool[] = [
    defineLocalTool({
      name: 'memory_diff',
      description:
        'What changed in memory since the last review. Without arguments: the summary (totals, up to 10 titles per source). With {namespace}: that source in detail, each changed document with an excerpt.',
      input: z.strictObject({ namespace: z.string().min(1).max(64).optional(), limit: z.number().int().min(1).max(50).optional() }),
      access: 'read', // reads memory only
      async execute({ namespace, limit }) {
        if (!namespace) return deps.rendered;
        const diff = await deps.memory.diffSince(deps.baseline, { entriesPerNamespace: limit ?? 20 });
        const ns = diff.namespaces.find((n) => n.namespace === namespace);
        if (!ns)
          return `No changes in namespace "${cleanLine(namespace, 64)}" since the last review. Sources with changes: ${diff.namespaces.map((n) => n.namespace).join(', ') || 'none'}.`;
        const lines = [`### ${ns.label} (${ns.kind}): ${ns.totals.added} added, ${ns.totals.modified} modified, ${ns.totals.removed} removed`];
        for (const e of ns.entries) {
          lines.push(`[${e.change}] ${cleanLine(e.title, 200)}`);
          if (e.change !== 'removed') {
            const doc = await deps.memory.getDocument(ns.namespace, e.external_id);
            if (doc?.body) lines.push(`  ${cleanLine(doc.body, EXCERPT_CHARS)}`);
          }
        }
        const shown = ns.entries.length;
        const total = ns.totals.added + ns.totals.modified + ns.totals.removed;
        if (total > shown) lines.push(`…and ${total - shown} more`);
        return lines.join('\n');
      },
    }),
    defineLocalTool({
      name: 'notify_user',
      description: `Tell the user something on their own thread in this app (nobody else sees it). Only for what they would want to be interrupted for. At most ${MAX_NOTIFICATIONS_PER_TICK} per review.`,
      input: z.strictObject({ message: text(500), priority: z.enum(NOTIFICATION_PRIORITIES).optional() }),
      access: 'read', // writes only this world's notifications table, at commit; contacts no one
      async execute({ message, priority }) {
        if (count(['notify']) >= MAX_NOTIFICATIONS_PER_TICK)
          throw new Error(`At most ${MAX_NOTIFICATIONS_PER_TICK} notifications per review; this one was not sent.`);
        staged.push({ op: 'notify', id: deps.ids(), message, priority: priority ?? 'normal' });
        return 'Noted: the user will see it on their thread.';
      },
    }),
    defineLocalTool({
      name: 'update_task',
      description:
        'To-dos for the user. Without id: add one (title required, optional note). With id: change its title, note or status (open, done, dropped). Open to-dos are listed in the prompt.',
      input: z.strictObject({
        id: z.string().min(1).max(100).optional(),
        title: text(200).optional(),
        note: z
          .string()
          .overwrite((t) => cleanLine(t, 500))
          .optional(),
        status: z.enum(TODO_STATUSES).optional(),
      }),
      access: 'read', // writes only this world's to-do table, at commit
      async execute({ id, title, note, status }) {
        if (count(['todo_add', 'todo_update']) >= MAX_TODO_CHANGES_PER_TICK) throw new Error(`At most ${MAX_TODO_CHANGES_PER_TICK} to-do changes per review.`);
        if (!id) {
          if (!title) throw new Error('A new to-do needs a title.');
          if (status && status !== 'open') throw new Error('A new to-do starts open; give no status.');
          const newId = deps.ids();
          staged.push({ op: 'todo_add', id: newId, title, note: note || null });
          return `Added to-do ${newId}.`;
        }
        if (!(await todos()).some((t) => t.id === id)) throw new Error(`No to-do "${cleanLine(id, 100)}".`);
        if (title === undefined && note === undefined && status === undefined) throw new Error('Give a title, note or status to change.');
        staged.push({ op: 'todo_update', id, title, note: note === undefined ? undefined : note || null, status });
        return `Updated to-do ${id}.`;
      },
    }),
    defineLocalTool({
      name: 'goals_list',
      description: "The user's goals (id, title, description, status).",
      input: z.strictObject({ status: z.enum(GOAL_STATUSES).optional() }),
      access: 'read',
      async execute({ status }) {
        const list = (await goals()).filter((g) => !status || g.status === status);
        return JSON.stringify(list.map(({ id, title, description, status: s }) => ({ id, title, description, status: s })));
      },
    }),
    defineLocalTool({
      name: 'goals_add',
      description: 'Record a goal of the user (a longer-term aim memory keeps pointing at).',
      input: z.strictObject({
        title: text(200),
        description: z
          .string()
          .overwrite((t) => cleanLine(t, 500))
          .optional(),
      }),
      access: 'read', // writes only this world's goals table, at commit
      async execute({ title, description }) {
        if (count(['goal_add', 'goal_edit']) >= MAX_GOAL_CHANGES_PER_TICK) throw new Error(`At most ${MAX_GOAL_CHANGES_PER_TICK} goal changes per review.`);
        if ((await goals()).some((g) => g.status === 'active' && g.title.toLowerCase() === title.toLowerCase()))
          throw new Error('That goal is already recorded.');
        const id = deps.ids();
        staged.push({ op: 'goal_add', id, title, description: description || null });
        return `Added goal ${id}.`;
      },
    }),
    defineLocalTool({
      name: 'goals_edit',
      description: 'Change a goal: its title, description or status (active, achieved, dropped).',
      input: z.strictObject({
        id: z.string().min(1).max(100),
        title: text(200).optional(),
        description: z
          .string()
          .overwrite((t) => cleanLine(t, 500))
          .optional(),
        status: z.enum(GOAL_STATUSES).optional(),
      }),
      access: 'read', // writes only this world's goals table, at commit
      async execute({ id, title, description, status }) {
        if (count(['goal_add', 'goal_edit']) >= MAX_GOAL_CHANGES_PER_TICK) throw new Error(`At most ${MAX_GOAL_CHANGES_PER_TICK} goal changes per review.`);
        if (!(await goals()).some((g) => g.id === id)) throw new Error(`No goal "${cleanLine(id, 100)}".`);
        if (title === undefined && description === undefined && status === undefined) throw new Error('Give a title, description or status to change.');
        staged.push({ op: 'goal_edit', id, title, description: description === undefined ? undefined : description || null, status });
        return `Updated goal ${id}.`;
      },
    }),
  ];
  if (deps.bots) tools.push(delegateTool(deps.bots, todos, staged, deps.ids));
  return { tools, staged };
}

function delegateTool(bots: ToolBots, todos: () => Promise<MemoryTodo[]>, staged: StagedOp[], ids: IdGen): LocalTool {
  return defineLocalTool({
    name: DELEGATE_TOOL_NAME,
    description: `Propose handing an open to-do to one of the user's bots (the prompt lists them). The user decides: nothing is sent until they accept it, then the bot gets it as a new task. Give the to-do's id (add it with update_task first), the bot's name, and what the bot should do. At most ${MAX_DELEGATIONS_PER_TICK} per review.`,
    input: z.strictObject({ todo_id: z.string().min(1).max(100), bot: z.string().min(1).max(100), instruction: text(1000) }),
    access: 'read', // stages a proposal in this world's table; the hand-off waits for a person
    async execute({ todo_id, bot, instruction }) {
      if (staged.filter((s) => s.op === 'delegate').length >= MAX_DELEGATIONS_PER_TICK)
        throw new Error(`At most ${MAX_DELEGATIONS_PER_TICK} delegations per review.`);
      const todo = (await todos()).find((t) => t.id === todo_id);
      if (!todo) throw new Error(`No to-do "${cleanLine(todo_id, 100)}"; add it with update_task first.`);
      if (todo.status !== 'open') throw new Error(`To-do "${todo.id}" is ${todo.status}: only an open one can be delegated.`);
      if (staged.some((s) => s.op === 'delegate' && s.todo_id === todo.id)) throw new Error(`To-do "${todo.id}" is already proposed for delegation.`);
      const wanted = bot.replace(/^@/, '').toLowerCase();
      const list = await bots();
      const target = list.find((b) => b.id === bot || b.name.toLowerCase() === wanted);
      if (!target) throw new Error(`No bot "${cleanLine(bot, 100)}". Bots: ${list.map((b) => b.name).join(', ') || 'none'}.`);
      const id = ids();
      staged.push({ op: 'delegate', id, todo_id: todo.id, todo_title: todo.title, bot_id: target.id, bot_name: target.name, instruction });
      return `Proposed: "${todo.title}" for @${target.name}. The user will accept or decline it.`;
    },
  });
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
