/**
 * Values every worker on one database must share (`shared_secrets`, migration 0009), such as the
 * cluster's bearer token: the first worker's value is kept, every later one reads it.
 */
import type { Kysely } from 'kysely';

export interface SharedSecretsTables {
  shared_secrets: { name: string; value: string; created_at: number };
}

/** The stored value of `name`, storing `initial` first when there is none (a race keeps one). */
export async function sharedSecret(db: Kysely<SharedSecretsTables>, name: string, initial: string, now: number): Promise<string> {
  await db
    .insertInto('shared_secrets')
    .values({ name, value: initial, created_at: Math.round(now) })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('shared_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}
