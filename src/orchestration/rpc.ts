/** The harness's RPC handlers, for `implement(orchestrationContract, orchestrationRpcHandlers(service))`. */
import type { Handlers } from '../protocol/contract.js';
import type { orchestrationContract } from '../protocol/orchestration.js';
import type { HarnessService } from './service.js';

export function orchestrationRpcHandlers(service: HarnessService): Handlers<(typeof orchestrationContract)['methods']> {
  return {
    'orchestration.send': (p) => service.send(p.channel, p.text, { wait: p.wait ?? false }),
    'orchestration.state': () => service.state(),
    'orchestration.cycles': (p) => service.cycles(p.limit ?? 20),
  };
}
