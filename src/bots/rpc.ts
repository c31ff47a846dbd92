/**
 * The `bots.*` handlers for `botsContract` (bind them with `implement(botsContract, …)`). Params
 * arrive validated by the contract's schemas; rule violations are SubconsciousErrors
 * (`not_found`, `conflict`, `invalid_params`), which the dispatcher turns into JSON-RPC errors.
 */
import type { Handlers } from '../protocol/contract.js';
import type { BotsMethods } from '../protocol/bots.js';
import type { BotsService } from './service.js';

export function botsRpcHandlers(service: BotsService): Handlers<BotsMethods> {
  return {
    'bots.list': () => service.listBots(),
    'bots.create': (p) => service.createBot(p),
    'bots.update': ({ bot_id, ...patch }) => service.updateBot(bot_id, patch),
    'bots.delete': (p) => service.deleteBot(p.bot_id),
    'bots.threads_list': (p) => service.threadsList(p.bot_id),
    'bots.thread': (p) => service.thread(p.thread_id, { before: p.before, limit: p.limit }),
    'bots.send_message': (p) => service.sendMessage(p),
    'bots.create_group': (p) => service.createGroup(p.name, p.bot_ids),
    'bots.stop_bot': (p) => service.stopBot(p.bot_id),
    'bots.cancel_intent': (p) => service.cancelIntent(p.task_id),
    'bots.dismiss_task': (p) => service.dismissTask(p.task_id),
    'bots.answer_approval': ({ id, approve, answer, ...rest }) =>
      service.answerApproval(id, answer ? { answer, ...rest } : { answer: approve ? 'accept' : 'ignore', by: rest.by, via: rest.via }),
    'bots.routines_list': (p) => service.routinesList(p.bot_id),
    'bots.routines_add': (p) => service.routinesAdd(p),
    'bots.routines_update': ({ id, ...patch }) => service.routinesUpdate(id, patch),
    'bots.routines_remove': (p) => service.routinesRemove(p.id),
    'bots.mark_read': (p) => service.markRead(p.thread_id),
    'bots.snapshot': () => service.snapshot(),
  };
}
