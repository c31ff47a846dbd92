/**
 * A Kysely dialect whose queries run on the read worker (read-worker.ts): the same SQL Kysely's
 * SQLite dialect would send, answered off the main thread. Read-only: no transactions, no writes.
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
  private worker: ReadWorker | null = null;
  private connection: ReadConnection | null = null;

  constructor(private readonly file: string) {}

  // Kysely calls this before the first query: a command that never reads heavily starts no thread.
  async init(): Promise<void> {
    this.worker = startReadWorker(this.file);
    this.connection = new ReadConnection(this.worker);
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
  async destroy(): Promise<void> {
    await this.worker?.close();
  }
}

/** `file`: a SQLite database file (not `:memory:`: another connection would see another database). */
export function readWorkerDialect(file: string): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new ReadDriver(file),
    createIntrospector: (db: Kysely<unknown>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
