/**
 * The decision agent's delegations (seed 4: "to-dos, goals, notify_user, delegation"). The agent
 * only proposes: `delegate` stages a row, commit stores it `pending`, and nothing leaves this
 * world until a person accepts it (the Memory tab, or `memory.delegation_accept`). Acceptance
 * claims the row first (pending → accepted, once), then hands the to-do to the bot as a new task
 * through the bots host; if the host refuses (the bot is gone), the row says `failed` and why.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { DelegationStatus, MemoryDelegation } from '../../protocol/memory.js';
import type { MemoryDelegationsTable, MemoryWorldTables } from './tables.js';

/** What the memory world needs of the bots host (the bots module provides it as `BotsDelegationKey`). */
export interface DelegationHost {
  /** The bots a to-do can go to. */
  bots(): Promise<{ id: string; name: string; label: string; description: string }[]>;
  /** A new task for the bot, in its direct thread. */
  delegate(botId: string, text: string): Promise<{ task_id: string | null; thread_id: string }>;
}

const STATUS_ORDER: Record<string, number> = { pending: 0, failed: 1, accepted: 2, declined: 3 };

export class DelegationStore {
  constructor(private readonly db: Kysely<MemoryWorldTables>) {}

  async list(status?: DelegationStatus, limit = 100): Promise<MemoryDelegation[]> {
    const rows = await this.db
      .selectFrom('memory_delegations')
      .selectAll()
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .orderBy('updated_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.sort((a, b) => (STATUS_ORDER[a.status] ?? 9) - (STATUS_ORDER[b.status] ?? 9)).map(toDelegation);
  }

  async get(id: string): Promise<MemoryDelegation> {
    const row = await this.db.selectFrom('memory_delegations').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new SubconsciousError('not_found', `No delegation "${id}".`, { hint: 'memory.delegations_list shows the delegations and their ids.' });
    return toDelegation(row);
  }

  /** A person's answer. Accepting hands the to-do to the bot through `host`. */
  async answer(id: string, accept: boolean, host: DelegationHost | undefined, now: number): Promise<MemoryDelegation> {
    const d = await this.get(id);
    if (d.status !== 'pending') throw new SubconsciousError('conflict', `Delegation "${id}" is ${d.status}, not pending: it was answered already.`);
    if (accept && !host) {
      throw new SubconsciousError('conflict', 'The bots host is not running, so no bot can take the to-do.', {
        hint: 'Enable [worlds.bots] in subconscious.toml and restart the daemon, then accept it again; or decline it.',
      });
    }
    // The claim: only one answer wins, even from two pages at once.
    const claimed = await this.db
      .updateTable('memory_delegations')
      .set({ status: accept ? 'accepted' : 'declined', updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) throw new SubconsciousError('conflict', `Delegation "${id}" was answered already.`);
    if (!accept) return this.get(id);
    try {
      const task = await host!.delegate(d.bot_id, delegationText(d));
      await this.db.updateTable('memory_delegations').set({ task_id: task.task_id, thread_id: task.thread_id }).where('id', '=', id).execute();
    } catch (err) {
      await this.db
        .updateTable('memory_delegations')
        .set({ status: 'failed', error: describeError(err).slice(0, 500) })
        .where('id', '=', id)
        .execute();
    }
    return this.get(id);
  }
}

/** What the bot reads: the person's accepted hand-off, in their direct thread. */
export function delegationText(d: Pick<MemoryDelegation, 'todo_title' | 'instruction'>): string {
  return `From my to-do list (suggested by the memory review, accepted by me): ${d.todo_title}\n\n${d.instruction}`;
}

function toDelegation(r: MemoryDelegationsTable): MemoryDelegation {
  return {
    ...r,
    status: r.status as DelegationStatus,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}
