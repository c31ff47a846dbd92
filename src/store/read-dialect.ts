/**
 * A Kysely dialect whose queries run on the read worker (read-worker.ts): the same SQL Kysely's
 * SQLite dialect would send, answered off the main thread. Read-only: no transactions, no writes.
 * The dialect also answers compiled reads in columns (columns.ts) on the same thread.
 */
import {
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';
import type { ColumnReader } from './columns.js';
import { startReadWorker, type ReadWorker } from './read-worker.js';

class ReadConnection implements DatabaseConnection {
  constructor(private readonly worker: ReadWorker) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return { rows: (await this.worker.all(query.sql, query.parameters)) as R[] };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the read connection does not stream');
  }
}

class ReadDriver implements Driver {
  private connection: ReadConnection | null = null;

  constructor(private readonly worker: () => ReadWorker) {}

  // Kysely calls this before the first query: a command that never reads heavily starts no thread.
  async init(): Promise<void> {
    this.connection = new ReadConnection(this.worker());
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection!;
  }
  async beginTransaction(): Promise<void> {
    throw new Error('the read connection runs no transactions');
  }
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/**
 * `file`: a SQLite database file (not `:memory:`: another connection would see another database).
 * `columns` answers a compiled read in columns on the same thread; `close` ends the thread (the
 * Kysely instance's `destroy` does not: the thread is shared).
 */
export function readWorkerDialect(file: string): Dialect & { columns: ColumnReader; close(): Promise<void> } {
  // Started by the first read of either kind, so a command that never reads heavily starts no thread.
  let worker: ReadWorker | null = null;
  const started = () => (worker ??= startReadWorker(file));
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new ReadDriver(started),
    createIntrospector: (db: Kysely<unknown>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    columns: (query) => started().columns(query.sql, query.parameters),
    close: async () => {
      await worker?.close();
    },
  };
}
