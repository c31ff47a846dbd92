/**
 * The provider gate and the rate-cap breaker, per world instance.
 *
 * Gate: before reflecting, every model role the world needs must answer (a probe, cached for a
 * few seconds by `llm/`); optional roles are probed only to be reported, since their absence
 * fails the work that uses them, not the tick. Results are kept for status.
 *
 * Breaker: a permanent rate-cap error (413, a tokens-per-minute limit smaller than the request)
 * halts the world while the provider and model are the ones that failed; changing either lifts
 * the halt, and so does a person (`clearHalt`) after lowering what made the requests too large.
 */
import { SubconsciousError, isSubconsciousError, type Logger } from '../core/index.js';
import type { Llm, ModelRole } from '../llm/index.js';
import type { WorldKeys } from './state.js';
import type { EngineKeys } from './status.js';
import type { World } from './types.js';

/** The gate closed: a required model did not answer (the tick is skipped, and counts as a failure). */
export class GateClosed extends SubconsciousError {}

export type Halt = NonNullable<EngineKeys['halt']>;

export class ProviderGate {
  constructor(
    private readonly world: World,
    private readonly llm: Llm,
    private readonly keys: WorldKeys<EngineKeys>,
    private readonly now: () => number,
    private readonly log: Logger,
    private readonly changed: () => void,
  ) {}

  /** Probe the roles reflect needs (throws `GateClosed`), then record the optional ones. */
  async open(): Promise<void> {
    for (const role of this.world.roles) {
      const probe = await this.llm.probe(role);
      await this.keys.set('provider', { available: probe.available, reason: probe.reason ?? null, at: this.now() });
      if (!probe.available) throw new GateClosed('model_unreachable', `the ${role} model is unavailable: ${probe.reason ?? 'no answer'}`);
    }
    await this.recordOptionalModels();
  }

  /** The reason while halted for the current provider/model; a halt for another signature is lifted. */
  async haltReason(halt: EngineKeys['halt'] | undefined): Promise<string | null> {
    if (!halt) return null;
    if (halt.signature === this.signature()) return halt.reason;
    await this.keys.set('halt', null);
    this.log.info({ world: this.keys.world, from: halt.signature, to: this.signature() }, 'provider or model changed: rate-cap halt lifted');
    this.changed();
    return null;
  }

  /** The halt a failure arms: only a permanent rate cap does. */
  haltFor(error: unknown, message: string): Halt | null {
    return isRateCap(error) ? { signature: this.signature(), reason: message, at: this.now() } : null;
  }

  /** Lift a halt by hand; false when the world was not halted. */
  async clear(): Promise<boolean> {
    const halt = await this.keys.get('halt');
    if (!halt) return false;
    await this.keys.setMany({ halt: null, last_outcome: null, last_summary: 'halt cleared by hand; the next tick tries again' });
    this.log.info({ world: this.keys.world, reason: halt.reason }, 'rate-cap halt cleared by hand');
    this.changed();
    return true;
  }

  private signature(): string {
    return this.world.roles.map((r) => `${r}=${this.llm.signature(r)}`).join(',');
  }

  /** Keep the optional roles that did not answer for status (written only when that changes). */
  private async recordOptionalModels(): Promise<void> {
    const optional = this.world.optionalRoles ?? [];
    if (!optional.length) return;
    const unavailable: Array<{ role: ModelRole; reason: string }> = [];
    for (const role of optional) {
      const probe = await this.llm.probe(role);
      if (!probe.available) unavailable.push({ role, reason: probe.reason ?? 'no answer' });
    }
    const before = (await this.keys.get('optional_unavailable')) ?? [];
    if (JSON.stringify(before) === JSON.stringify(unavailable)) return;
    await this.keys.set('optional_unavailable', unavailable);
    this.changed();
  }
}

/** The error kind the model layer gives (`ModelError.kind`), if any. */
export function modelErrorKind(err: unknown): string | undefined {
  const kind = (err as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? kind : undefined;
}

function isRateCap(err: unknown): boolean {
  return isSubconsciousError(err, 'model_rate_cap') || modelErrorKind(err) === 'rate_cap';
}
