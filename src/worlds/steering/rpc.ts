/** The steering world's RPC handlers, for `implement(steeringContract, steeringRpcHandlers(service))`. */
import type { Handlers } from '../../protocol/contract.js';
import type { steeringContract } from '../../protocol/steering.js';
import type { SteeringService } from './service.js';

export function steeringRpcHandlers(service: SteeringService): Handlers<(typeof steeringContract)['methods']> {
  return {
    'steering.current': () => service.current(),
    'steering.list': (p) => service.list(p.limit ?? 50),
  };
}
