/**
 * A read-only SQLite connection on a worker thread. better-sqlite3 is synchronous: a heavy read
 * on the main thread (`usage.summary` over a 90-day ledger: about 170 ms of one statement) holds
 * the event loop, and every request that arrives meanwhile (`subconscious.status`) waits behind
 * it. Here the statement runs on another thread against the same WAL file, and the main thread
 * only waits for a message.
 *
 * The thread's code is a short plain-JS string (`eval: true`) so it runs the same under tsx,
 * vitest and the built dist/ (a `.ts` worker file would need a loader in each).
 */
import { Worker } from 'node:worker_threads';
import type { Columns } from './columns.js';
import { READ_PRAGMAS, SQLITE_MODULE_PATH } from './sqlite-driver.js';

export interface ReadWorker {
  /** Run one read statement; rows as better-sqlite3's `all()` returns them. */
  all(sql: string, params: readonly unknown[]): Promise<unknown[]>;
  /** Run one read statement; its answer in columns (columns.ts), the number columns' buffers moved, not copied. */
  columns(sql: string, params: readonly unknown[]): Promise<Columns>;
  close(): Promise<void>;
}

/**
 * How many nice steps below the main thread the read thread runs (19 is the lowest priority; the
 * main thread keeps the process's own). Measured with `perf sched` under `bench:doors`: at 0 the
 * main thread waited behind this thread for a core 4× as long (85 ms against 20–24 ms a run). Not
 * further: at 10 a heavy read still gets about a tenth of a core a busy program shares with it.
 */
const READ_THREAD_NICER = 10;

const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
// Below the main thread's priority (Linux: a thread's nice value is its own), so on a busy
// machine a status or page call gets a core before the next heavy statement.
try {
  const os = require('node:os');
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  os.setPriority(tid, Math.min(19, os.getPriority(tid) + workerData.nicer));
} catch {
  // not Linux, or not allowed: the thread runs at the process's priority
}
const db = new SQLite(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
for (const pragma of workerData.pragmas) db.pragma(pragma);
const statements = new Map();
// Columns (store/columns.ts): all numbers, a Float64Array; else codes into the distinct values.
function columnsOf(stmt, rows) {
  const columns = {};
  stmt.columns().forEach(({ name }, c) => {
    if (rows.every((r) => typeof r[c] === 'number')) {
      columns[name] = Float64Array.from(rows, (r) => r[c]);
      return;
    }
    const values = [];
    const index = new Map();
    const codes = new Uint32Array(rows.length);
    rows.forEach((r, i) => {
      let code = index.get(r[c]);
      if (code === undefined) index.set(r[c], (code = values.push(r[c]) - 1));
      codes[i] = code;
    });
    columns[name] = { values, codes };
  });
  return { length: rows.length, columns };
}
parentPort.on('message', ({ id, sql, params, shape }) => {
  try {
    let stmt = statements.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      if (statements.size >= 64) statements.delete(statements.keys().next().value);
      statements.set(sql, stmt);
    }
    // readonly connection: a write fails in SQLite itself; non-readers are refused here to say why.
    if (!stmt.reader) throw new Error('the read connection runs only statements that return rows');
    if (shape !== 'columns') return parentPort.postMessage({ id, rows: stmt.raw(false).all(params) });
    const answer = columnsOf(stmt, stmt.raw(true).all(params));
    const moved = Object.values(answer.columns).map((c) => (c instanceof Float64Array ? c.buffer : c.codes.buffer));
    parentPort.postMessage({ id, columns: answer }, moved);
  } catch (err) {
    parentPort.postMessage({ id, error: { message: String(err && err.message || err), code: err && err.code } });
  }
});
`;

interface Answer {
  id: number;
  rows?: unknown[];
  columns?: Columns;
  error?: { message: string; code?: string };
}

export function startReadWorker(file: string): ReadWorker {
  const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { file, driver: SQLITE_MODULE_PATH, pragmas: READ_PRAGMAS, nicer: READ_THREAD_NICER } });
  // The daemon's exit must not wait for an idle reader.
  worker.unref();
  const pending = new Map<number, { resolve: (answer: Answer) => void; reject: (err: Error) => void }>();
  let next = 0;
  let failed: Error | null = null;
  const failAll = (err: Error) => {
    failed = err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const settle = (answer: Answer) => {
    const p = pending.get(answer.id);
    if (!p) return;
    pending.delete(answer.id);
    if (pending.size === 0) worker.unref();
    if (answer.error) p.reject(Object.assign(new Error(answer.error.message), answer.error.code ? { code: answer.error.code } : {}));
    else p.resolve(answer);
  };
  // Node hands over a port's waiting messages in one go, each caller's continuation run right after
  // its answer: answers that piled up while the main thread was busy (a batch of heavy reads) were
  // all processed before anything else got a turn (a status request waited for every one). One
  // answer per turn of the event loop instead.
  const arrived: Answer[] = [];
  const deliverOne = () => {
    const answer = arrived.shift();
    if (arrived.length > 0) setImmediate(deliverOne);
    if (answer) settle(answer);
  };
  worker.on('message', (answer: Answer) => {
    if (arrived.push(answer) === 1) setImmediate(deliverOne);
  });
  worker.on('error', (err) => failAll(err));
  worker.on('exit', (code) => failAll(new Error(`the SQLite read thread exited (code ${code})`)));
  const ask = (sql: string, params: readonly unknown[], shape: 'rows' | 'columns'): Promise<Answer> => {
    if (failed) return Promise.reject(failed);
    const id = next++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      // Kept alive while a read is out, so a caller awaiting it is not left hanging at exit.
      worker.ref();
      worker.postMessage({ id, sql, params, shape });
    });
  };
  return {
    all: async (sql, params) => (await ask(sql, params, 'rows')).rows ?? [],
    columns: async (sql, params) => (await ask(sql, params, 'columns')).columns ?? { length: 0, columns: {} },
    async close() {
      failAll(new Error('the SQLite read thread was closed'));
      await worker.terminate();
    },
  };
}
