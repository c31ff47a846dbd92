/**
 * Day budgets (seed 2 §9.3): pulses and resumes per bot and store-wide, per local day, so they
 * roll over at local midnight by construction (a new day is a new row). A reservation is one
 * conditional increment, so two daemons sharing Postgres never spend past a limit; counters are
 * written before the pulse or the dispatch (crash safety). The same rows keep the day's cost
 * figures (pulse tokens, resume calls and tokens, the measured size of a full bot call).
 */
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../core/index.js';
import type { HeartbeatBudgetsTable, HeartbeatTables } from './tables.js';

/** What a key with no row has used (shared, read-only). */
const NO_USE: BudgetUse = Object.freeze({ pulses: 0, resumes: 0 });
export const GLOBAL_SCOPE = 'global';
/** Days of counters kept (the Usage figure reads up to 90 days; older rows are dropped). */
export const BUDGET_RETENTION_DAYS = 100;

export type BudgetRow = Selectable<HeartbeatBudgetsTable>;
export type BudgetUse = Readonly<{ pulses: number; resumes: number }>;

/**
 * Counters by day, then scope: a lookup with the strings a caller holds (a bot's id, a day key),
 * no key made per lookup — triage looks up every due bot's.
 */
export class BudgetCounts {
  private readonly days = new Map<string, Map<string, BudgetUse>>();

  put(scope: string, day: string, use: BudgetUse): void {
    let scopes = this.days.get(day);
    if (!scopes) this.days.set(day, (scopes = new Map()));
    scopes.set(scope, use);
  }

  get(scope: string, day: string): BudgetUse {
    return this.days.get(day)?.get(scope) ?? NO_USE;
  }
}
type Counter = 'pulses' | 'resumes';
type Figure =
  | 'errors'
  | 'pulse_input_tokens'
  | 'pulse_output_tokens'
  | 'resume_runs'
  | 'resume_calls'
  | 'resume_input_tokens'
  | 'resume_output_tokens'
  | 'full_calls'
  | 'full_input_tokens';

export class BudgetStore {
  constructor(private readonly d: { db: Kysely<HeartbeatTables>; clock: Clock }) {}

  private get db() {
    return this.d.db;
  }

  private async ensure(scope: string, day: string): Promise<void> {
    await this.db
      .insertInto('heartbeat_budgets')
      .values({
        scope,
        day_key: day,
        pulses: 0,
        resumes: 0,
        errors: 0,
        pulse_input_tokens: 0,
        pulse_output_tokens: 0,
        resume_runs: 0,
        resume_calls: 0,
        resume_input_tokens: 0,
        resume_output_tokens: 0,
        full_calls: 0,
        full_input_tokens: 0,
        updated_at: this.d.clock.now(),
      })
      .onConflict((oc) => oc.columns(['scope', 'day_key']).doNothing())
      .execute();
  }

  /** Count one if the day's count is below `max`; false when spent. */
  async reserve(scope: string, day: string, counter: Counter, max: number): Promise<boolean> {
    await this.ensure(scope, day);
    const res = await this.db
      .updateTable('heartbeat_budgets')
      .set((eb) => ({ [counter]: eb(counter, '+', 1), updated_at: this.d.clock.now() }))
      .where('scope', '=', scope)
      .where('day_key', '=', day)
      .where(counter, '<', max)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Give one back (a reservation whose work never started). */
  async refund(scope: string, day: string, counter: Counter): Promise<void> {
    await this.db
      .updateTable('heartbeat_budgets')
      .set((eb) => ({ [counter]: eb(counter, '-', 1), updated_at: this.d.clock.now() }))
      .where('scope', '=', scope)
      .where('day_key', '=', day)
      .where(counter, '>', 0)
      .execute();
  }

  /** Add to the day's figures (tokens, errors, measured calls). */
  async add(scope: string, day: string, figures: Partial<Record<Figure, number>>): Promise<void> {
    const entries = Object.entries(figures).filter(([, v]) => v !== undefined && v !== 0) as [Figure, number][];
    if (entries.length === 0) return;
    await this.ensure(scope, day);
    await this.db
      .updateTable('heartbeat_budgets')
      .set((eb) => {
        const set: Record<string, unknown> = { updated_at: this.d.clock.now() };
        for (const [k, v] of entries) set[k] = eb(k, '+', Math.round(v));
        return set;
      })
      .where('scope', '=', scope)
      .where('day_key', '=', day)
      .execute();
  }

  /** The counters of these scopes on their days (a missing row is zeros). */
  async counts(keys: readonly { scope: string; day: string }[]): Promise<BudgetCounts> {
    const out = new BudgetCounts();
    if (keys.length === 0) return out;
    const rows = await this.db
      .selectFrom('heartbeat_budgets')
      .select(['scope', 'day_key', 'pulses', 'resumes'])
      .where('scope', 'in', [...new Set(keys.map((k) => k.scope))])
      .where('day_key', 'in', [...new Set(keys.map((k) => k.day))])
      .execute();
    for (const r of rows) out.put(r.scope, r.day_key, { pulses: Number(r.pulses), resumes: Number(r.resumes) });
    return out;
  }

  /** Store-wide rows of these days (the usage figure). */
  async days(scope: string, days: readonly string[]): Promise<BudgetRow[]> {
    if (days.length === 0) return [];
    return this.db
      .selectFrom('heartbeat_budgets')
      .selectAll()
      .where('scope', '=', scope)
      .where('day_key', 'in', [...days])
      .execute();
  }

  /** Drop counters older than the retention (day keys sort as dates). */
  async prune(beforeDay: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_budgets').where('day_key', '<', beforeDay).execute();
  }

  async removeBot(botId: string): Promise<void> {
    await this.db.deleteFrom('heartbeat_budgets').where('scope', '=', botId).execute();
  }
}
