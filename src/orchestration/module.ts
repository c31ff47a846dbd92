/**
 * The closed-loop harness (seed 5) as a host module: no world of its own (the steering world
 * reflects on it), its `[worlds.orchestration]` section, its tables, the `orchestration.*`
 * methods and events, `subconscious example closed-loop`, and `HarnessKey` for the steering world.
 *
 *   mode = "auto"     (default) live when the memory store and the agent runner are there and the
 *                     local model answers its probe; otherwise that cycle runs on the stand-ins,
 *                     and the cycle's mode and the state's `mode_reason` say so.
 *   mode = "offline"  deterministic stand-ins: no model, no memory store needed.
 *   mode = "live"     the quick tier on the `local` model, the reasoning tier on the app's agent
 *                     runner, retrieval and eviction on the memory store (the memory module,
 *                     earlier in the module list). Without a memory store (no module provides
 *                     `memory.store`) the daemon does not start: a config error names the key and
 *                     the service — never a live mode that quietly forgets what it evicts.
 *
 * The steering world provides the harness's subconscious layer (`SubconsciousLayerKey`): its
 * directives steer the reasoning tier and a forwarded cycle asks it for a review. It starts after
 * this module, so the layer is looked up at cycle time. Checkpoints go to the harness's own
 * tables (checkpoints.ts), so a cycle killed mid-way resumes from its last finished node at the
 * next start, where `start()` picks up every unfinished cycle.
 */
import { SubconsciousError } from '../core/errors.js';
import { provide } from '../core/services.js';
import { defineModule } from '../engine/index.js';
import { orchestrationContract } from '../protocol/orchestration.js';
import { harnessCheckpointer } from './checkpoints.js';
import { registerExampleCommands } from './cli.js';
import { orchestrationConfigSchema } from './config.js';
import { orchestrationMigrations } from './migrations.js';
import { orchestrationRpcHandlers } from './rpc.js';
import { HarnessService } from './service.js';
import { HarnessAgentKey, HarnessKey, HarnessMemoryKey, SubconsciousLayerKey, type HarnessMemory } from './services.js';
import { ORCHESTRATION_TABLES, type OrchestrationTables } from './tables.js';
import type { EvictionSink, Retriever, SteeringSource } from './types.js';

/** Finished or failed checkpoint threads an odd exit left behind are swept at start after this long. */
const CHECKPOINT_RETENTION_MS = 7 * 24 * 3_600_000;

export const orchestrationModule = defineModule<typeof orchestrationConfigSchema, OrchestrationTables, typeof orchestrationContract>({
  kind: 'orchestration',
  host: true,
  description: 'The closed-loop harness: channel messages through a quick tier, a reasoning tier and a subconscious layer that steers it.',
  config: orchestrationConfigSchema,
  tables: { names: ORCHESTRATION_TABLES, migrations: orchestrationMigrations },
  contract: orchestrationContract,
  // The memory store and the agent runner in live mode; the steering world's layer once it exists.
  uses: [HarnessMemoryKey, HarnessAgentKey, SubconsciousLayerKey],
  provides: [HarnessKey],
  cli: {
    name: 'example',
    description: 'runnable examples (offline: no model, no workspace needed)',
    register: (command, cli) => registerExampleCommands(command, cli.print),
  },
  create(ctx) {
    const config = ctx.config;
    // `live` requires its parts (a config error names the missing one); `auto` uses them when they are there.
    const live = config.mode === 'live';
    const found = { memory: ctx.services.find(HarnessMemoryKey), agent: ctx.services.find(HarnessAgentKey) };
    const memory = live
      ? requireService(found.memory, HarnessMemoryKey.id, 'the memory store (retrieval and eviction)')
      : config.mode === 'auto'
        ? found.memory
        : undefined;
    const agent = live
      ? requireService(found.agent, HarnessAgentKey.id, 'the agent runner (the reasoning tier)')
      : config.mode === 'auto'
        ? found.agent
        : undefined;

    const layer = () => ctx.services.find(SubconsciousLayerKey);
    const steering: SteeringSource = { forCycle: async (seq) => (await layer()?.forCycle(seq)) ?? null };
    const checkpointer = harnessCheckpointer(ctx.db, ctx.clock);
    const harness = new HarnessService({
      db: ctx.db,
      clock: ctx.clock,
      ids: ctx.ids,
      log: ctx.log,
      emit: (type, data) => ctx.events.emit(type, data),
      settings: config,
      llm: ctx.llm,
      agent,
      retriever: memory && retrieverOf(memory),
      eviction: memory && evictionOf(memory),
      steering,
      checkpointer,
      requestReview: (req) => layer()?.requestReview(req),
    });
    return {
      handlers: orchestrationRpcHandlers(harness),
      provides: [provide(HarnessKey, harness)],
      async start() {
        await checkpointer.pruneFinished(CHECKPOINT_RETENTION_MS);
        const picked = await harness.recover();
        if (picked) ctx.log.info({ cycles: picked }, 'resuming unfinished harness cycles');
        await harness.prune();
      },
      close: () => harness.close(),
    };
  },
});

function requireService<T>(value: T | undefined, id: string, what: string): T {
  if (value !== undefined) return value;
  throw new SubconsciousError('config_invalid', `worlds.orchestration.mode = "live" needs ${what}: the service "${id}", which no module before it provides.`, {
    hint: `Add the module that provides "${id}" before orchestration in the module list, or set [worlds.orchestration] mode = "offline" in subconscious.toml.`,
    details: { key: 'worlds.orchestration.mode', service: id },
  });
}

function retrieverOf(memory: HarnessMemory): Retriever {
  return { recall: (q) => memory.recall(q) };
}

/** Evicted semantic traces become memory documents (storing the same id again updates it in place). */
function evictionOf(memory: HarnessMemory): EvictionSink {
  return {
    async store(doc) {
      await memory.storeDocument({ ...doc, source_kind: 'orchestration' }, { label: 'Orchestration harness: evicted traces', kind: 'orchestration' });
    },
  };
}
