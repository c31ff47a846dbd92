/**
 * The `heartbeat` world (seed 2) on the engine's `World` contract, one tick per `tick_seconds`:
 *
 *   observe         Tier 0 triage (triage.ts): deterministic, 0 tokens; quiet when no due bot
 *                   needs a pulse (a quiet tick still commits its skips and next checks)
 *   prepareContext  nothing more to gather: the digests were built with the triage
 *   reflect         Tier 1 pulses (reflect.ts), `pulse_concurrency` at a time
 *   commit          claims and Tier 2 dispatches, check-ins, backoff (commit.ts)
 *
 * The world declares no required model role: a pulse model that does not answer is a per-bot
 * pulse error (backoff, then the bot's heartbeat switched off), never a failed tick — and a
 * quiet tick is `quiet`, never `failed`. `local` is probed as an optional role so status says
 * when it is away.
 */
import type { CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import type { HeartbeatCore } from './core.js';
import { commitTick } from './commit.js';
import { runPulses, type HeartbeatReflection } from './reflect.js';
import { observe, type HeartbeatObservation } from './triage.js';
import { STALE_CLAIM_MS } from '../../bots/index.js';
import { ORPHAN_AGE_MS, STALE_STREAMING_MS } from './rules.js';

export type HeartbeatWorld = World<HeartbeatObservation, Record<string, never>, HeartbeatReflection>;

/** Pulses one tick can hold: `pulse_concurrency` lanes, each fitting its timeouts into most of a tick. */
export function maxPulsesPerTick(s: { pulse_concurrency: number; tick_seconds: number; pulse_timeout_seconds: number }): number {
  return s.pulse_concurrency * Math.max(1, Math.floor((0.8 * s.tick_seconds) / s.pulse_timeout_seconds));
}

export interface HeartbeatWorldOptions {
  kind?: string;
  /** Work each tick does first (routines, housekeeping). */
  beforeTick?: () => Promise<void>;
  /**
   * Whether `beforeTick` would surely do nothing now, given whether a routine is due: read-only.
   * Without it the world has no probe (every tick runs in full under the lease).
   */
  beforeTickIdle?: (routinesDue: boolean) => Promise<boolean>;
}

const NO_BOT_DUE = 'no bot due';
const OFF = 'heartbeat off';

export function createHeartbeatWorld(core: HeartbeatCore, opts: HeartbeatWorldOptions = {}): HeartbeatWorld {
  let tickSeconds = core.d.config.tick_seconds;
  const idle = opts.beforeTickIdle;

  /**
   * Before the lease: surely quiet when the tick's first work has nothing to do, and (heartbeat
   * on) no sweep could find anything and no bot is due — every wake-up (a settle, a follow-up, a
   * check-in's expiry, "Check now", a restart) marks its bot due, so the due index sees them all.
   * Two indexed reads (the host's leftovers, the due index); the settings as cached.
   */
  async function probe(): Promise<string | null> {
    const left = await core.host.leftovers({ claimOlderThanMs: STALE_CLAIM_MS, orphanOlderThanMs: ORPHAN_AGE_MS, streamingOlderThanMs: STALE_STREAMING_MS });
    if (!idle || !(await idle(left.routines !== false))) return null;
    const settings = await core.settings.global();
    tickSeconds = settings.tick_seconds;
    if (settings.mode === 'off') return OFF;
    if (left.claims || left.open || left.streaming) return null;
    return (await core.bots.anyDue(core.now())) ? null : NO_BOT_DUE;
  }

  return {
    kind: opts.kind ?? 'heartbeat',
    ...(idle ? { probe } : {}),
    roles: [],
    optionalRoles: ['local'],
    intervalMinutes: () => tickSeconds / 60,
    async observe(): Promise<Observation<HeartbeatObservation>> {
      await opts.beforeTick?.();
      const settings = await core.settings.global();
      tickSeconds = settings.tick_seconds;
      const data = await observe(core, maxPulsesPerTick(settings));
      const pulses = data.plans.filter((p) => p.pulse).length;
      return { quiet: pulses === 0, tainted: false, data };
    },
    async prepareContext() {
      return {};
    },
    async reflect(ctx: TickContext, _context, observation): Promise<HeartbeatReflection> {
      return runPulses(core, observation.data, ctx.signal);
    },
    async commit(ctx: TickContext, input: CommitInput<HeartbeatObservation, HeartbeatReflection>): Promise<CommitSummary> {
      const obs = input.observation.data;
      if (obs.plans.length === 0) return { summary: obs.mode === 'off' ? OFF : NO_BOT_DUE };
      const c = await commitTick(core, obs, input.reflection, ctx.tickId);
      const parts = [`${c.checked} ${c.checked === 1 ? 'bot' : 'bots'} checked`];
      if (c.pulsed) parts.push(`${c.pulsed} pulsed`);
      if (c.resumed) parts.push(`${c.resumed} resumed`);
      if (c.checked_in) parts.push(`${c.checked_in} checked in`);
      if (c.skipped) parts.push(`${c.skipped} skipped`);
      if (c.errors) parts.push(`${c.errors} ${c.errors === 1 ? 'error' : 'errors'}`);
      if (c.deferred) parts.push(`${c.deferred} left for the next tick`);
      return { summary: parts.join(', '), counts: { ...c } };
    },
  };
}
