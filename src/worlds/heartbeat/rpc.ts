/**
 * The heartbeat's handlers for `heartbeatContract` (bound with `implement`). Params arrive
 * validated by the contract's schemas; rule violations are SubconsciousErrors (`not_found`,
 * `conflict`), which the dispatcher turns into JSON-RPC errors.
 */
import type { Handlers } from '../../protocol/contract.js';
import type { HeartbeatMethods } from '../../protocol/heartbeat.js';
import type { HeartbeatService } from './service.js';

export function heartbeatRpcHandlers(service: HeartbeatService): Handlers<HeartbeatMethods> {
  return {
    'bots.set_heartbeat': (p) => service.setHeartbeat(p.bot_id, p.enabled),
    'bots.heartbeat_now': (p) => service.heartbeatNow(p.bot_id),
    'bots.set_heartbeat_settings': (p) => service.setSettings(p),
    'bots.resolve_checkin': (p) => service.resolveCheckin(p.id, p.resolution, { by: p.by, via: p.via }),
    'bots.mark_user_active': (p) => service.markUserActive(p.thread_id),
    'bots.heartbeat_log': (p) => service.log(p),
    'bots.heartbeat_snapshot': (p) => service.snapshot(p),
    'bots.heartbeat_usage': (p) => service.usage(p),
    'bots.add_followup': (p) => service.addFollowUp(p),
  };
}
