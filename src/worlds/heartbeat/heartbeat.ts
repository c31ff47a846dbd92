/**
 * `createHeartbeat(deps)`: the heartbeat assembled over a bots host — its world (one engine tick
 * per `tick_seconds`), its RPC service, its listeners on the host. `start()` runs once at daemon
 * start, after the bots host's restart repair: bots with interrupted work are scheduled within two
 * ticks (§5.6), other open work and pending follow-ups staggered over their interval.
 */
import { cutByShutdown } from '../../bots/index.js';
import { describeError, startOfZonedDay } from '../../core/index.js';
import type { Handlers } from '../../protocol/contract.js';
import type { HeartbeatMethods } from '../../protocol/heartbeat.js';
import { BUDGET_RETENTION_DAYS } from './budget-store.js';
import { HeartbeatCore, type HeartbeatDeps } from './core.js';
import { HeartbeatListeners } from './listeners.js';
import { heartbeatRpcHandlers } from './rpc.js';
import { dayKey, restartCheck, staggeredFirstCheck, userActiveUntil } from './schedule.js';
import { HeartbeatService } from './service.js';
import { createHeartbeatWorld, type HeartbeatWorld } from './world.js';

/** The persona lines' settings are re-read this often (another daemon may change them). */
const PERSONA_REFRESH_MS = 5 * 60_000;

export interface Heartbeat {
  core: HeartbeatCore;
  world: HeartbeatWorld;
  service: HeartbeatService;
  handlers: Handlers<HeartbeatMethods>;
  /** After the bots host started (its repair done): schedule restart work. Call once. */
  start(): Promise<{ scheduled: number }>;
  /** Unregister from the host. */
  close(): Promise<void>;
}

export function createHeartbeat(deps: HeartbeatDeps): Heartbeat {
  const core = new HeartbeatCore(deps);
  const listeners = new HeartbeatListeners(core);
  listeners.register();
  const service = new HeartbeatService(core, listeners);
  // Old budget rows are pruned once a day: the day's end is kept, so a tick formats no day key.
  let pruned: { zone: string; until: number } | null = null;
  const pruneDue = (zone: string, now: number) => pruned === null || pruned.zone !== zone || now >= pruned.until || now < pruned.until - 48 * 3600_000;
  const world = createHeartbeatWorld(core, {
    beforeTick: async () => {
      // §9.1: routines first. A routine due in this tick is dispatched before triage reads the
      // bots, so its bot is busy (single-flight) rather than a candidate resumed ahead of it.
      try {
        await deps.host.fireDueRoutines();
      } catch (err) {
        deps.log.warn({ err: describeError(err) }, 'heartbeat: the routines due could not be fired before the tick; the routine timer retries');
      }
      await listeners.refreshPersona(PERSONA_REFRESH_MS);
      // The settings as cached (a quiet tick reads none; their own change replaces them at once).
      const g = await core.settings.global();
      const now = core.now();
      if (pruneDue(g.timezone, now)) {
        pruned = { zone: g.timezone, until: startOfZonedDay(now, g.timezone, 1) };
        await core.budgets.prune(dayKey(now - BUDGET_RETENTION_DAYS * 24 * 3600_000, g.timezone));
      }
    },
    // The probe's question: no routine due, and the day's budgets already pruned. The persona
    // lines' refresh is reads only (kept in memory), so it runs here when it comes due.
    beforeTickIdle: async (routinesDue) => {
      if (routinesDue) return false;
      await listeners.refreshPersona(PERSONA_REFRESH_MS);
      const g = await core.settings.global();
      return !pruneDue(g.timezone, core.now());
    },
  });
  return {
    core,
    world,
    service,
    handlers: heartbeatRpcHandlers(service),
    start: async () => {
      await listeners.refreshPersona();
      try {
        return await scheduleAfterRestart(core);
      } catch (err) {
        deps.log.warn({ err: describeError(err) }, 'heartbeat: could not schedule the work a restart left; the sweeps find it tick by tick');
        return { scheduled: 0 };
      }
    },
    close: async () => listeners.close(),
  };
}

async function scheduleAfterRestart(core: HeartbeatCore): Promise<{ scheduled: number }> {
  const now = core.now();
  const g = await core.settings.global();
  const host = core.host;
  // Resumes that were in flight when the process died: their rows say `resuming` no more.
  for (const row of await core.bots.inState('resuming')) {
    const task = row.last_resume_task_id ? await host.getTask(row.last_resume_task_id) : undefined;
    if (task?.status !== 'queued' && task?.status !== 'working') await core.update(row.bot_id, { state: 'idle' });
  }
  const marks = new Map<string, number>();
  const earliest = (botId: string, at: number) => marks.set(botId, Math.min(marks.get(botId) ?? Infinity, at));
  const open = await host.openWork({ limit: 10_000 });
  const tickMs = g.tick_seconds * 1000;
  let dueNow = false;
  for (const t of open) {
    // Cut off by a clean shutdown: due now, and a one-shot tick (below) resumes it without waiting
    // for the cadence. A crash's interrupted work is staggered over two ticks instead.
    if (cutByShutdown(t)) {
      earliest(t.bot_id, now);
      dueNow = true;
    } else if (t.status === 'failed' && t.error_kind === 'interrupted') earliest(t.bot_id, restartCheck(now, tickMs, core.random));
    else earliest(t.bot_id, staggeredFirstCheck(now, g.interval_seconds * 1000, core.random));
  }
  for (const f of await core.followups.pending()) if (f.due_at !== null) earliest(f.bot_id, Number(f.due_at));
  for (const [botId, at] of marks) {
    const thread = await host.directThread(botId).catch(() => undefined);
    if (!thread) continue;
    // A person who wrote just before the crash still counts as active: the first check comes when
    // they no longer do, not earlier (it would only be deferred).
    const { userActiveAt } = await host.userActivity(thread.id);
    await core.mark(botId, userActiveAt === null ? at : Math.max(at, userActiveUntil(userActiveAt)), thread.id);
  }
  if (dueNow && g.mode !== 'off') core.d.trigger?.();
  return { scheduled: marks.size };
}
