/**
 * The SQLite driver for this Node: better-sqlite3 13 on Node ≥ 22 (installed as the optional
 * dependency `better-sqlite3-node22`), 12 on Node 20. Neither works on both: 12's `ObjectWrap`
 * destructors abort the process on Node 24 when a statement or database is collected after the
 * environment is gone (`Assertion failed: (env) != nullptr`), and 13 needs Node ≥ 22. Their APIs
 * are the same, so the rest of the code imports `SQLite` from here and never the package.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

function load(): typeof BetterSqlite3 {
  if (NODE_MAJOR >= 22) {
    try {
      return require('better-sqlite3-node22') as typeof BetterSqlite3;
    } catch (err) {
      // Installed with --omit=optional, or on a registry mirror without it: 12 runs until a statement is collected late.
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
      process.emitWarning(
        `better-sqlite3-node22 is not installed: using better-sqlite3 12, which can abort Node ${process.versions.node} at exit. Reinstall without --omit=optional.`,
      );
    }
  }
  return require('better-sqlite3') as typeof BetterSqlite3;
}

export const SQLite: typeof BetterSqlite3 = load();
export type SqliteDatabase = BetterSqlite3.Database;

/** Where the loaded driver lives, so a worker thread (store/read-worker.ts) loads the same one. */
export const SQLITE_MODULE_PATH: string = (() => {
  if (NODE_MAJOR >= 22) {
    try {
      return require.resolve('better-sqlite3-node22');
    } catch {
      // fall through to 12, as load() does
    }
  }
  return require.resolve('better-sqlite3');
})();

/**
 * Reads a daemon does all day, kept in memory: a 32 MiB page cache (SQLite's default, 2 MiB, held
 * less than one heartbeat triage pass at 100,000 bots, which then read its pages again every
 * tick) and the file's pages mapped rather than copied in (256 MiB at most). Both connections.
 */
export const READ_PRAGMAS = ['cache_size = -32768', 'mmap_size = 268435456'] as const;
