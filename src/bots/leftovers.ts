/**
 * Whether the heartbeat's sweeps could find anything: a claim older than the stale window, an
 * open task whose owner's lease lapsed, a bot reply left streaming — and whether a routine is due
 * (what the tick fires first). One indexed statement (four `EXISTS` on their own indexes),
 * compiled once per database, so a quiet tick that finds nothing pays one read instead of four;
 * when it says yes, the sweeps run as before and decide (this process's live runs, the claimer, a
 * run still writing).
 */
import { sql, type Kysely } from 'kysely';
import { perDatabase, precompile } from '../store/index.js';
import type { BotsTables } from './tables.js';
import { OPEN_STATUSES } from './task-store.js';

export interface LeftoverCutoffs {
  /** Claims taken before this (ms). */
  claimBefore: number;
  /** Open tasks not written, and not leased, since this. */
  openBefore: number;
  /** Bot replies still streaming/queued, not written since this. */
  streamingBefore: number;
  /** Enabled routines whose slot is at or before this (now). */
  routinesBy: number;
}

export interface Leftovers {
  claims: boolean;
  open: boolean;
  streaming: boolean;
  /** A routine is due (absent: not known, so maybe). */
  routines?: boolean;
}

const probe = perDatabase((db: Kysely<BotsTables>) =>
  precompile(db, 4, (claimBefore: number, openBefore: number, streamingBefore: number, routinesBy: number) =>
    db.selectNoFrom((eb) => [
      eb.exists(eb.selectFrom('bots_tasks').select(sql.lit(1).as('x')).where('claim_at', '<', claimBefore).where('claim_token', 'is not', null)).as('claims'),
      eb
        .exists(
          eb
            .selectFrom('bots_tasks')
            .select(sql.lit(1).as('x'))
            .where('status', 'in', [...OPEN_STATUSES])
            .where('updated_at', '<', openBefore)
            .where((w) => w.or([w('owner_seen_at', 'is', null), w('owner_seen_at', '<', openBefore)])),
        )
        .as('open'),
      eb
        .exists(
          eb
            .selectFrom('bots_messages')
            .select(sql.lit(1).as('x'))
            .where('status', 'in', ['streaming', 'queued'])
            .where('role', '=', 'bot')
            .where('updated_at', '<', streamingBefore),
        )
        .as('streaming'),
      eb
        .exists(eb.selectFrom('bots_routines').select(sql.lit(1).as('x')).where('enabled', '=', sql.lit(1)).where('next_run_at', '<=', routinesBy))
        .as('routines'),
    ]),
  ),
);

/** Which of the three sweeps could find something, and whether a routine is due (SQLite answers 0/1, Postgres booleans). */
export async function leftovers(db: Kysely<BotsTables>, at: LeftoverCutoffs): Promise<Required<Leftovers>> {
  const row = (await probe(db)(at.claimBefore, at.openBefore, at.streamingBefore, at.routinesBy)).rows[0] as Record<string, unknown> | undefined;
  const yes = (v: unknown) => v === true || Number(v) === 1;
  return { claims: yes(row?.claims), open: yes(row?.open), streaming: yes(row?.streaming), routines: yes(row?.routines) };
}
