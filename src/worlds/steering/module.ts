/**
 * The steering world (seed 4's "tinyplace" world) as a module: its `[worlds.steering]` section,
 * its tables, `steering.current` / `steering.list` and their events, and the Steering tab.
 *
 * It needs the harness (`HarnessKey`: the orchestration module, earlier in the module list) for
 * the compressed history it reviews, and gives the harness its subconscious layer back
 * (`SubconsciousLayerKey`): the directive for a cycle, and "review now" — the harness's event
 * trigger, which runs this world's tick in the background (`ctx.trigger()`, as Run now does).
 * Its own schedule (`interval_minutes`) is the cron trigger.
 */
import { defineModule } from '../../engine/index.js';
import { provide } from '../../core/services.js';
import { HarnessKey, SubconsciousLayerKey } from '../../orchestration/services.js';
import { steeringContract } from '../../protocol/steering.js';
import { steeringConfigSchema } from './config.js';
import { steeringMigrations } from './migrations.js';
import { steeringRpcHandlers } from './rpc.js';
import { STEERING_TABLES, type SteeringTables } from './tables.js';
import { createSteeringWorld } from './world.js';

export const steeringModule = defineModule<typeof steeringConfigSchema, SteeringTables, typeof steeringContract>({
  kind: 'steering',
  description: 'Reviews the harness’s recent cycles and steers its reasoning tier with a short directive.',
  config: steeringConfigSchema,
  tables: { names: STEERING_TABLES, migrations: steeringMigrations },
  contract: steeringContract,
  needs: [HarnessKey],
  provides: [SubconsciousLayerKey],
  tab: 'steering',
  // The world reads its settings object at each use.
  live: ['interval_minutes', 'max_output_tokens'],
  create(ctx) {
    const harness = ctx.services.get(HarnessKey);
    const world = createSteeringWorld({
      db: ctx.db,
      harness: harness.store,
      settings: ctx.config,
      emit: (type, data) => ctx.events.emit(type, data),
    });
    return {
      world,
      handlers: steeringRpcHandlers(world.service),
      provides: [
        provide(SubconsciousLayerKey, {
          forCycle: (seq: number) => world.directives.forCycle(seq),
          requestReview: () => ctx.trigger(),
        }),
      ],
      async start() {
        const pruned = await world.prune(ctx.clock.now());
        if (pruned) ctx.log.info({ directives: pruned }, 'steering retention: deleted old expired directives');
      },
    };
  },
});
