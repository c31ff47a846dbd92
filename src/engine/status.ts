/**
 * Status is read from the store, never through the tick lock (DESIGN.md invariant 5), so a
 * page or `subconscious status` answers at once even while a tick runs for minutes.
 */
import type { Kysely } from 'kysely';
import { InstanceState } from './state.js';
import type { EngineTables } from './tables.js';
import type { ModelRole } from '../llm/index.js';
import type { Backoff } from '../protocol/backoff.js';
import type { InstanceStatus, TickOutcomeKind } from './types.js';

/** The keys the engine keeps under `<world>:` (besides the world's own). */
export interface EngineKeys {
  enabled: boolean;
  last_tick_at: number | null;
  total_ticks: number;
  consecutive_failures: number;
  halt: { signature: string; reason: string; at: number } | null;
  provider: { available: boolean; reason: string | null; at: number } | null;
  /** Optional roles that did not answer at the last gate (empty when all did). */
  optional_unavailable: Array<{ role: ModelRole; reason: string }> | null;
  last_outcome: TickOutcomeKind | null;
  last_summary: string | null;
  last_error: string | null;
  next_tick_at: number | null;
  open_tick: OpenTick | null;
}

/** A tick that started and has not ended: present after a crash, so the next start resumes it. */
export interface OpenTick {
  tickId: string;
  startedAt: number;
  since: number | null;
}

export async function readEngineKeys(state: InstanceState, world: string): Promise<Partial<EngineKeys>> {
  return (await state.all(world)) as Partial<EngineKeys>;
}

/** The scheduler backs off after failures in a row (see backoff.ts); a halt says why on its own. */
function backoffOf(keys: Partial<EngineKeys>): Backoff | null {
  const failures = keys.consecutive_failures ?? 0;
  if (failures === 0 || keys.halt) return null;
  return { failures, reason: keys.last_error ?? 'no reason was recorded', next_try_at: keys.next_tick_at ?? null };
}

export async function readStatus(
  db: Kysely<EngineTables>,
  world: string,
  opts: { description: string; tab: string | null; intervalMinutes: number; enabledByDefault: boolean; disabledBy?: string | null; now: number },
): Promise<InstanceStatus> {
  const keys = await readEngineKeys(new InstanceState(db, () => opts.now), world);
  const lease = await db.selectFrom('tick_leases').select(['holder', 'expires_at']).where('world', '=', world).executeTakeFirst();
  return {
    world,
    description: opts.description,
    tab: opts.tab,
    enabled: !opts.disabledBy && (keys.enabled ?? opts.enabledByDefault),
    disabled_by: opts.disabledBy ?? null,
    provider_available: keys.provider ? keys.provider.available : null,
    provider_unavailable_reason: keys.provider && !keys.provider.available ? keys.provider.reason : null,
    optional_models_unavailable: keys.optional_unavailable ?? [],
    interval_minutes: opts.intervalMinutes,
    last_tick_at: keys.last_tick_at ?? null,
    total_ticks: keys.total_ticks ?? 0,
    consecutive_failures: keys.consecutive_failures ?? 0,
    halted: !!keys.halt,
    halt_reason: keys.halt?.reason ?? null,
    running: !!(lease && lease.holder && lease.expires_at > opts.now),
    last_outcome: keys.last_outcome ?? null,
    last_summary: keys.last_summary ?? null,
    last_error: keys.last_error ?? null,
    next_tick_at: keys.next_tick_at ?? null,
    backoff: backoffOf(keys),
  };
}
