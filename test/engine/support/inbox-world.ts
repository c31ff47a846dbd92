/**
 * A world that exists only to test the engine. Its "workspace" is an inbox kept in the store:
 * observe reads items past the world's baseline cursor (quiet when none), reflect asks the local
 * model for one JSON summary, commit writes the summary and moves the baseline. Hooks let a test
 * hold or fail a stage.
 */
import { z } from 'zod';
import type { CommitInput, Observation, TickContext, World } from '../../../src/engine/index.js';
import { fence } from '../../../src/llm/index.js';

export interface InboxItem {
  id: number;
  text: string;
}

export const summarySchema = z.object({ summary: z.string(), important: z.array(z.number()) });
export type Summary = z.infer<typeof summarySchema>;

export interface InboxHooks {
  /** Awaited at the start of commit (a test can hold the tick there). */
  beforeCommit?: (ctx: TickContext) => Promise<void> | void;
  afterObserve?: (ctx: TickContext) => Promise<void> | void;
}

export interface InboxWorld extends World<InboxItem[], string, Summary> {
  commits: Summary[];
  abandoned: string[];
}

export function inboxWorld(opts: { kind?: string; intervalMinutes?: number; hooks?: InboxHooks; optionalRoles?: World['optionalRoles'] } = {}): InboxWorld {
  const commits: Summary[] = [];
  const abandoned: string[] = [];
  return {
    kind: opts.kind ?? 'inbox',
    roles: ['local'],
    ...(opts.optionalRoles ? { optionalRoles: opts.optionalRoles } : {}),
    commits,
    abandoned,
    intervalMinutes: () => opts.intervalMinutes ?? 5,
    async observe(ctx): Promise<Observation<InboxItem[]>> {
      const inbox = (await ctx.state.get<InboxItem[]>('inbox')) ?? [];
      const baseline = (await ctx.state.get<number>('baseline')) ?? 0;
      const fresh = inbox.filter((i) => i.id > baseline);
      await opts.hooks?.afterObserve?.(ctx);
      return { quiet: fresh.length === 0, tainted: true, data: fresh };
    },
    async prepareContext(_ctx, observation) {
      return observation.data.map((i) => fence(i.text, { label: `item ${i.id}` })).join('\n');
    },
    async reflect(ctx, context) {
      const { value } = await ctx.llm.object(
        { world: ctx.world, purpose: 'summarise', role: 'local', signal: ctx.signal },
        { system: 'Summarise the new inbox items.', prompt: context, schema: summarySchema },
      );
      return value;
    },
    async commit(ctx, input: CommitInput<InboxItem[], Summary>) {
      await opts.hooks?.beforeCommit?.(ctx);
      if (input.observation.quiet) return { summary: 'nothing new' };
      const last = Math.max(...input.observation.data.map((i) => i.id));
      commits.push(input.reflection!);
      const outbox = (await ctx.state.get<Summary[]>('outbox')) ?? [];
      await ctx.state.set('outbox', [...outbox, input.reflection]);
      await ctx.state.set('baseline', last);
      return { summary: `summarised ${input.observation.data.length} item(s)`, counts: { items: input.observation.data.length } };
    },
    async abandon(_ctx, reason) {
      abandoned.push(reason);
    },
  };
}

export async function addInboxItems(
  state: { get<T>(k: string): Promise<T | undefined>; set(k: string, v: unknown): Promise<void> },
  texts: string[],
): Promise<void> {
  const inbox = (await state.get<InboxItem[]>('inbox')) ?? [];
  let id = inbox.reduce((m, i) => Math.max(m, i.id), 0);
  await state.set('inbox', [...inbox, ...texts.map((text) => ({ id: ++id, text }))]);
}
