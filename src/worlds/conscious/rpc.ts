/**
 * The conscious world's RPC handlers. `conscious.run` returns at once: it asks the engine for a
 * tick through the injected `trigger` (the composition root binds it to the instance) and does
 * not wait for it; `conscious.completed` / `conscious.error` tell how the run went.
 */
import { describeError } from '../../core/errors.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import type { Handlers } from '../../protocol/contract.js';
import type { ConsciousMethods } from '../../protocol/conscious.js';
import type { ConsciousService } from './service.js';

/** Start a tick of the conscious instance; may return the tick's promise (it is not awaited). */
export type ConsciousTrigger = () => unknown;

export function consciousRpcHandlers(service: ConsciousService, trigger: ConsciousTrigger, log: Logger = silentLogger): Handlers<ConsciousMethods> {
  return {
    'conscious.run': (p) => {
      service.requestRun({ force: p.force });
      try {
        const pending = trigger();
        if (pending instanceof Promise) pending.catch((err: unknown) => log.error({ err: describeError(err) }, 'conscious run trigger failed'));
      } catch (err) {
        log.error({ err: describeError(err) }, 'conscious run trigger failed');
        throw err;
      }
      return {
        started: true,
        message: p.force
          ? 'A conscious loop run started; it reads memory even if nothing changed.'
          : 'A conscious loop run started; it reads memory only if something changed since the last run.',
      };
    },
    'conscious.list': (p) => service.list({ state: p.state, limit: p.limit }),
    'conscious.dismiss': (p) => service.dismiss(p.id),
    'conscious.complete': (p) => service.complete(p.id),
    'conscious.reopen': (p) => service.reopen(p.id),
    'conscious.runs': (p) => service.listRuns(p.limit ?? 10),
  };
}
