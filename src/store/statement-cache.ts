/**
 * A prepared-statement cache for Kysely's SQLite dialect. Kysely's driver calls
 * `database.prepare(sql)` for every query, and preparing costs more than running a small indexed
 * statement; Kysely compiles a query to the same text each time, so the prepared statement is
 * kept by its text (LRU, bounded) and reused.
 *
 * Safe across schema changes: SQLite re-prepares a statement whose schema changed when it next
 * runs (a migration that adds a column shows it; a dropped table fails as it would uncached).
 * A statement still iterating (a streamed query, `busy`) is never handed out twice: a fresh one
 * is prepared for the second user.
 */
import type SQLite from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

export const STATEMENT_CACHE_SIZE = 256;

export interface CachedDatabase extends SqliteDatabase {
  /** Statements prepared (cache misses) and reused (hits), for benches and tests. */
  readonly stats: { prepared: number; reused: number; size: number };
}

export function cachedStatements(database: SQLite.Database, capacity = STATEMENT_CACHE_SIZE): CachedDatabase {
  const cache = new Map<string, SQLite.Statement>();
  const stats = { prepared: 0, reused: 0, size: 0 };
  return {
    stats,
    close: () => {
      cache.clear();
      database.close();
    },
    prepare(sql: string): SqliteStatement {
      const hit = cache.get(sql);
      if (hit && !hit.busy) {
        // Most recently used goes last: the first key is the one to evict.
        cache.delete(sql);
        cache.set(sql, hit);
        stats.reused++;
        return hit as unknown as SqliteStatement;
      }
      const stmt = database.prepare(sql);
      stats.prepared++;
      if (!hit) {
        cache.set(sql, stmt);
        if (cache.size > capacity) cache.delete(cache.keys().next().value!);
      }
      stats.size = cache.size;
      return stmt as unknown as SqliteStatement;
    },
  };
}
