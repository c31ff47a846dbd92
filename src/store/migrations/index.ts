/**
 * Numbered migrations, applied in name order at start. Append one line per new migration;
 * never edit or renumber one that has shipped.
 */
import type { Migration } from 'kysely';
import * as m0001 from './0001_core.js';

export const migrations: Record<string, Migration> = {
  '0001_core': m0001,
};
