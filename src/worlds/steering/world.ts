/**
 * The `steering` world (seed 4's "tinyplace" world) on the engine's `World` contract: the deep
 * reflection layer over the closed-loop harness.
 *
 *   observe         the unreviewed compressed history rows past the review cursor (batch 20),
 *                   the last 20 world mutations and the current cycle; none → quiet, 0 tokens.
 *   prepareContext  the fenced prompt.
 *   reflect         one tool-free `llm.text` call at temperature 0.3 (reflect.ts): a directive,
 *                   or `NONE` (idle); a missing directive line is asked once more, then fails.
 *   commit          the directive (if any) and the cursor, in one transaction; only on success.
 *                   Then retention: expired directives past `retention_days` are deleted.
 *
 * Always tainted: the history carries channel text from outside. The world's db, the harness's
 * history and the settings come from `createSteeringWorld(deps)`; the tick context is used only
 * for clock, ids, llm, log, signal and tick identity.
 */
import type { Kysely } from 'kysely';
import type { CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import type { ModelRole } from '../../llm/types.js';
import type { SteeringConfig } from './config.js';
import type { SteeringEmit } from './events.js';
import { REVIEW_BATCH, REVIEW_MUTATIONS, reflectSteering, steeringPrompt } from './reflect.js';
import { SteeringService } from './service.js';
import { SteeringStore } from './store.js';
import type { SteeringTables } from './tables.js';
import type { HarnessHistory, SteeringContext, SteeringObservation, SteeringReflection } from './types.js';

export interface SteeringWorldDeps {
  /** The world's own tables. */
  db: Kysely<SteeringTables>;
  /** The harness's compressed history and world timeline (the harness service's `store`). */
  harness: HarnessHistory;
  settings: SteeringConfig | (() => SteeringConfig);
  emit: SteeringEmit;
}

export type SteeringWorld = World<SteeringObservation, SteeringContext, SteeringReflection> & {
  readonly service: SteeringService;
  /** What the harness's reasoning tier is steered by (its `SteeringSource`). */
  readonly directives: SteeringStore;
  /** Delete expired directives older than `retention_days` (at `now`); returns how many. */
  prune(now: number): Promise<number>;
};

const DAY_MS = 24 * 3_600_000;
const NOTHING_UNREVIEWED = 'no unreviewed harness history';

export function createSteeringWorld(deps: SteeringWorldDeps): SteeringWorld {
  const store = new SteeringStore(deps.db);
  const service = new SteeringService(store, deps.harness);
  const settings = (): SteeringConfig => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const role: ModelRole = settings().role;

  /** Before the lease: no unreviewed history (the quiet path's two reads) needs no tick at all. */
  async function probe(): Promise<string | null> {
    const cursor = await store.cursor();
    return (await deps.harness.unreviewed(cursor.reviewed_seq, 1)).length === 0 ? NOTHING_UNREVIEWED : null;
  }

  async function observe(): Promise<Observation<SteeringObservation>> {
    const cursor = await store.cursor();
    const rows = await deps.harness.unreviewed(cursor.reviewed_seq, REVIEW_BATCH);
    if (rows.length === 0) {
      return { quiet: true, tainted: true, data: { rows: [], mutations: [], current_cycle: 0, reviewed_seq: cursor.reviewed_seq } };
    }
    const [mutations, current] = await Promise.all([deps.harness.recentMutations(REVIEW_MUTATIONS), deps.harness.currentCycle()]);
    return {
      quiet: false,
      tainted: true,
      data: { rows, mutations, current_cycle: Math.max(current, rows.at(-1)!.seq), reviewed_seq: cursor.reviewed_seq },
    };
  }

  async function prepareContext(_ctx: TickContext, observation: Observation<SteeringObservation>): Promise<SteeringContext> {
    const d = observation.data;
    return { prompt: steeringPrompt(d), from_seq: d.rows[0]!.seq, to_seq: d.rows.at(-1)!.seq };
  }

  function reflect(ctx: TickContext, context: SteeringContext): Promise<SteeringReflection> {
    return reflectSteering(
      ctx.llm,
      { world: ctx.world, role, signal: ctx.signal, maxOutputTokens: settings().max_output_tokens },
      context.prompt,
      settings().default_expires_after_cycles,
    );
  }

  async function prune(now: number): Promise<number> {
    return store.prune({ before: now - settings().retention_days * DAY_MS, currentCycle: await deps.harness.currentCycle() });
  }

  async function commit(ctx: TickContext, input: CommitInput<SteeringObservation, SteeringReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    if (observation.quiet || !reflection) return { summary: NOTHING_UNREVIEWED, counts: { rows: 0 } };
    const d = observation.data;
    const rows = d.rows.length;
    const { directive, inserted, cursor } = await store.commitReview({
      tickId: ctx.tickId,
      newId: ctx.ids(),
      fromSeq: d.rows[0]!.seq,
      toSeq: d.rows.at(-1)!.seq,
      rows,
      cycle: d.current_cycle,
      directive: reflection.outcome === 'directive' ? { text: reflection.text, expires_after_cycles: reflection.expires_after_cycles } : null,
      at: ctx.clock.now(),
    });
    deps.emit('steering.reviewed', { tick_id: ctx.tickId, outcome: reflection.outcome, rows, reviewed_seq: cursor.reviewed_seq });
    if (directive && inserted) {
      deps.emit('steering.directive', {
        id: directive.id,
        text: directive.text,
        expires_after_cycles: directive.expires_after_cycles,
        cycle: directive.cycle,
        expires_at_cycle: directive.expires_at_cycle,
      });
    }
    ctx.log.info({ rows, outcome: reflection.outcome, reviewed_seq: cursor.reviewed_seq, attempts: reflection.attempts }, 'steering review committed');
    // Retention after the review is stored: a failure here costs nothing but a log line.
    await prune(ctx.clock.now()).catch((err: unknown) => ctx.log.warn({ err }, 'steering retention failed; it runs again after the next review'));
    const span = `cycle${rows === 1 ? '' : 's'} ${d.rows[0]!.seq}${rows > 1 ? `–${d.rows.at(-1)!.seq}` : ''}`;
    return directive
      ? {
          summary: `reviewed ${span}: directive for ${directive.expires_after_cycles} cycle${directive.expires_after_cycles === 1 ? '' : 's'}: ${directive.text.slice(0, 120)}`,
          counts: { rows, directives: 1 },
        }
      : { summary: `reviewed ${span}: no steering needed`, counts: { rows, directives: 0 } };
  }

  return {
    kind: 'steering',
    probe,
    roles: [role],
    service,
    directives: store,
    prune,
    intervalMinutes: () => settings().interval_minutes,
    observe,
    prepareContext,
    reflect,
    commit,
    // The steering world's own words for what a person can do (the model layer names no world).
    hint: (error) =>
      (error as { kind?: unknown } | null)?.kind === 'rate_cap'
        ? 'A review reads at most 20 compressed cycles: give [worlds.steering] role a model with a larger context window, then press "Try again" on the Steering card.'
        : undefined,
  };
}
