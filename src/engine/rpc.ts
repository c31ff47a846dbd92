/** The engine's RPC handlers (`protocol/engine.ts`): status from the store, Run now, enable, clear a halt, the method list. */
import type { Handlers } from '../protocol/contract.js';
import type { StatusResult, engineContract } from '../protocol/engine.js';
import type { Registry } from './registry.js';

export function engineRpcHandlers(
  registry: Registry,
  methods: () => Array<{ name: string; description: string }>,
): Handlers<(typeof engineContract)['methods']> {
  return {
    'rpc.methods': () => methods(),
    'subconscious.status': async (): Promise<StatusResult> => {
      const instances = await registry.status();
      // Seed 4 back-compat: the legacy top-level fields mirror the first registered world.
      const first = instances[0];
      return {
        instances,
        enabled: first?.enabled ?? false,
        total_ticks: first?.total_ticks ?? 0,
        consecutive_failures: first?.consecutive_failures ?? 0,
        last_tick_at: first?.last_tick_at ?? null,
      };
    },
    'subconscious.trigger': async ({ kind }) => {
      const { triggered, skipped } = await registry.requestRun(kind ?? 'all');
      return { triggered, skipped };
    },
    'subconscious.set_enabled': async ({ world, enabled }) => {
      await registry.setEnabled(world, enabled);
      return { world, enabled };
    },
    'subconscious.clear_halt': async ({ world }) => ({ world, cleared: await registry.clearHalt(world) }),
  };
}
