/** The engine's RPC methods: status (from the store, never the tick lock), trigger, enable, clear a halt. */
import { z } from 'zod';
import { defineMethod, type RpcMethod } from '../core/rpc.js';
import type { Registry } from './registry.js';
import type { InstanceStatus } from './types.js';

const worldName = z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a world name such as "tasks"');

export interface StatusResult {
  instances: InstanceStatus[];
  /** Seed 4 back-compat: the top-level fields mirror the primary instance (the task loop). */
  enabled: boolean;
  total_ticks: number;
  consecutive_failures: number;
  last_tick_at: number | null;
}

export function engineRpcMethods(registry: Registry, primary = 'tasks'): RpcMethod[] {
  return [
    defineMethod('subconscious.status', z.object({}).strict(), 'Status of every world instance, read from the store.', async (): Promise<StatusResult> => {
      const instances = await registry.status();
      const main = instances.find((i) => i.world === primary) ?? instances[0];
      return {
        instances,
        enabled: main?.enabled ?? false,
        total_ticks: main?.total_ticks ?? 0,
        consecutive_failures: main?.consecutive_failures ?? 0,
        last_tick_at: main?.last_tick_at ?? null,
      };
    }),
    defineMethod(
      'subconscious.trigger',
      z.object({ kind: z.union([z.literal('all'), worldName]).optional() }).strict(),
      'Run a tick now in the background (a running tick is superseded); returns at once.',
      ({ kind }) => {
        const { triggered } = registry.trigger(kind ?? 'all');
        return { triggered };
      },
    ),
    defineMethod(
      'subconscious.set_enabled',
      z.object({ world: worldName, enabled: z.boolean() }).strict(),
      'Enable or disable one world instance (kept across restarts).',
      async ({ world, enabled }) => {
        await registry.setEnabled(world, enabled);
        return { world, enabled };
      },
    ),
    defineMethod(
      'subconscious.clear_halt',
      z.object({ world: worldName }).strict(),
      "Lift a world's rate-cap halt after changing what made its requests too large (e.g. a lower context_budget_tokens); it ticks at once and halts again if they still do not fit. {cleared: false} when it was not halted.",
      async ({ world }) => ({ world, cleared: await registry.clearHalt(world) }),
    ),
  ];
}
