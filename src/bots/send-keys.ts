/**
 * `bots.send_message`'s idempotency keys: a client-chosen key per thread, kept with the first
 * send's person message and (once every reply was dispatched) its result, so a send repeated
 * with that key — its answer lost, a restart between — returns that result and writes nothing
 * new. The unique index on (thread, key) makes the first writer of a key win across workers.
 */
import type { Kysely } from 'kysely';
import type { Clock, IdGen } from '../core/index.js';
import type { DispatchedTask } from '../protocol/bots.js';
import { parseJson } from './rows.js';
import type { BotsTables } from './tables.js';

export interface SendKey {
  threadId: string;
  key: string;
  /** The person's message of the first send (written once, by this id). */
  messageId: string;
  /** Null until every reply of the first send was dispatched. */
  dispatched: DispatchedTask[] | null;
  createdAt: number;
}

export class SendKeyStore {
  constructor(
    private readonly db: Kysely<BotsTables>,
    private readonly o: { clock: Clock; ids: IdGen },
  ) {}

  async get(threadId: string, key: string): Promise<SendKey | undefined> {
    const r = await this.db.selectFrom('bots_send_keys').selectAll().where('thread_id', '=', threadId).where('idempotency_key', '=', key).executeTakeFirst();
    if (!r) return undefined;
    return {
      threadId: r.thread_id,
      key: r.idempotency_key,
      messageId: r.message_id,
      dispatched: parseJson<DispatchedTask[] | null>(r.dispatched, null),
      createdAt: Number(r.created_at),
    };
  }

  /** This key's row: the one written now (a fresh message id), or the one an earlier send (or a concurrent one) wrote. */
  async claim(threadId: string, key: string): Promise<{ row: SendKey; fresh: boolean }> {
    const row: SendKey = { threadId, key, messageId: this.o.ids(), dispatched: null, createdAt: this.o.clock.now() };
    try {
      await this.db
        .insertInto('bots_send_keys')
        .values({ thread_id: threadId, idempotency_key: key, message_id: row.messageId, dispatched: null, created_at: row.createdAt })
        .execute();
      return { row, fresh: true };
    } catch (err) {
      const first = await this.get(threadId, key);
      if (!first) throw err; // not a duplicate key: a real failure
      return { row: first, fresh: false };
    }
  }

  async finish(threadId: string, key: string, dispatched: readonly DispatchedTask[]): Promise<void> {
    await this.db
      .updateTable('bots_send_keys')
      .set({ dispatched: JSON.stringify(dispatched) })
      .where('thread_id', '=', threadId)
      .where('idempotency_key', '=', key)
      .execute();
  }
}
