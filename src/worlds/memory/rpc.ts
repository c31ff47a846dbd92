/**
 * The memory module's RPC handlers: the memory store's methods (any host pushes documents), the
 * configured sources' (`memory.sources`, `memory.sync`) and the memory world's (`memory.diff`, notifications, to-dos, goals) — one contract.
 */
import { memorySourcesHandlers, memoryStoreHandlers } from '../../memory/rpc.js';
import type { MemorySources } from '../../memory/sources/manager.js';
import type { MemoryStore } from '../../memory/store.js';
import type { Handlers } from '../../protocol/contract.js';
import type { MemoryMethods, MemoryWorldMethods } from '../../protocol/memory.js';
import type { MemoryWorldService } from './service.js';

export function memoryWorldHandlers(service: MemoryWorldService): Handlers<MemoryWorldMethods> {
  return {
    'memory.diff': () => service.diff(),
    'memory.notifications_list': (p) => service.notifications(p.limit ?? 50),
    'memory.todos_list': (p) => service.todos(p.status),
    'memory.goals_list': (p) => service.goals(p.status),
    'memory.todos_update': (p) => service.setTodoStatus(p.id, p.status),
    'memory.goals_update': (p) => service.setGoalStatus(p.id, p.status),
    'memory.delegations_list': (p) => service.delegations(p.status),
    'memory.delegation_accept': (p) => service.answerDelegation(p.id, true),
    'memory.delegation_decline': (p) => service.answerDelegation(p.id, false),
  };
}

/** Every method of `memoryContract`. */
export function memoryRpcHandlers(store: MemoryStore, sources: MemorySources, service: MemoryWorldService): Handlers<MemoryMethods> {
  return { ...memoryStoreHandlers(store, (namespace) => sources.get(namespace)), ...memorySourcesHandlers(sources), ...memoryWorldHandlers(service) };
}
