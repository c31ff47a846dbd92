/** The `runtime.*` handlers for `runtimesContract` (params arrive validated by its schemas). */
import type { Handlers } from '../protocol/contract.js';
import type { RuntimesMethods } from '../protocol/runtimes.js';
import type { RuntimesService } from './service.js';

export function runtimesRpcHandlers(service: RuntimesService): Handlers<RuntimesMethods> {
  return {
    'runtime.register': (p) => service.register(p),
    'runtime.report': (p) => service.report(p),
    'runtime.poll': (p) => service.poll(p),
    'runtime.ack': (p) => service.ack(p),
    'runtime.dispatches': (p) => service.dispatches(p),
    'runtime.list': () => service.list(),
    'runtime.bots': (p) => service.botStatuses(p),
    'runtime.unregister': (p) => service.unregister(p),
  };
}
