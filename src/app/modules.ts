/**
 * The modules this product ships, in start order (a module that provides a service comes before
 * the ones that need it; the app checks). Adding a world: its folder under `src/worlds/`, its
 * contract in `src/protocol/` (listed in `productContracts`), and one line here.
 */
import { botsModule } from '../bots/index.js';
import type { WorldModule } from '../engine/index.js';
import { orchestrationModule } from '../orchestration/index.js';
import { runtimesModule } from '../runtimes/index.js';
import { consciousModule } from '../worlds/conscious/index.js';
import { heartbeatModule } from '../worlds/heartbeat/index.js';
import { memoryModule } from '../worlds/memory/index.js';
import { steeringModule } from '../worlds/steering/index.js';
import { tasksModule } from '../worlds/tasks/index.js';

export const productModules: readonly WorldModule[] = [
  memoryModule,
  tasksModule,
  consciousModule,
  botsModule,
  runtimesModule,
  heartbeatModule,
  orchestrationModule,
  steeringModule,
];
