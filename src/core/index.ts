export { SubconsciousError, isSubconsciousError, describeError } from './errors.js';
export { type Clock, systemClock, FakeClock, flush } from './clock.js';
export { type IdGen, uuid, sequentialIds } from './ids.js';
export { EventBus, type BusEvent, type Listener } from './events.js';
export { createLogger, humanLogLine, silentLogger, type Logger } from './logger.js';
export { RpcDispatcher, defineMethod, type RpcMethod, type RpcResponse, type RpcError } from './rpc.js';
export { processOwner, ownedByThisProcess, ownerIsGone } from './process-identity.js';
export { isTimeZone, startOfZonedDay, systemTimeZone, zonedDate } from './time-zone.js';
export { untilAborted } from './abort.js';
