/**
 * The key that makes "the same task twice" one database fact (issue 9): its wording up to case,
 * spacing and Unicode compatibility forms, its schedule and its write intent. A unique index on
 * it (among tasks not completed) refuses a duplicate in the database itself, so neither a batch
 * nor concurrent requests can slip past a read-before-write. Hashed: a title may expand under
 * NFKC far beyond what an index entry may hold.
 */
import { createHash } from 'node:crypto';
import { titleKey } from './heartbeat-md.js';

export function dedupeKey(title: string, recurrence: string, needsTools: boolean): string {
  return createHash('sha256')
    .update(`${needsTools ? 'write' : 'read'}\n${recurrence}\n${titleKey(title)}`)
    .digest('hex');
}
