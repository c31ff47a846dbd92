/**
 * `simulate`'s store: a fresh in-memory SQLite database, migrated like any other, holding a copy
 * of the user's standing tasks and world on/off toggles, read from their configured database
 * read-only when it exists. The user's database is never written; what the simulated ticks
 * write (log rows, schedules, the ledger) stays in memory and is gone when the store closes.
 */
import { SubconsciousError, describeError } from '../core/errors.js';
import { hasTable, openReadOnlyStore, openStore, type Store } from '../store/index.js';
import type { Selectable } from 'kysely';
import type { SubconsciousTasksTable } from '../store/index.js';
import type { Config } from './config.js';

/**
 * The columns copied, named so a database with columns this version does not know still copies.
 * The later ones (`LATER_COLUMNS`) are copied when the source has them: an older database lacks them.
 */
const TASK_COLUMNS = [
  'id',
  'title',
  'source',
  'origin',
  'origin_present',
  'recurrence',
  'enabled',
  'needs_tools',
  'last_run_at',
  'next_run_at',
  'completed',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof SubconsciousTasksTable)[];
const LATER_COLUMNS = ['origin_order', 'user_disabled'] as const satisfies readonly (keyof SubconsciousTasksTable)[];

type CopiedTask = Pick<Selectable<SubconsciousTasksTable>, (typeof TASK_COLUMNS)[number]> &
  Partial<Pick<Selectable<SubconsciousTasksTable>, (typeof LATER_COLUMNS)[number]>>;

export interface ScratchStore {
  store: Store;
  /** Where the tasks came from (null: no database yet) and how many were copied. */
  imported: { from: string | null; tasks: number; toggles: number };
}

/** Rows the user's database holds that a simulation starts from. */
interface UserRows {
  tasks: Awaited<ReturnType<typeof readTasks>>;
  toggles: Awaited<ReturnType<typeof readToggles>>;
}

export async function openScratchStore(workspace: string, config: Config): Promise<ScratchStore> {
  const source = await openReadOnlyStore({ workspace, databaseUrl: config.database.url });
  let rows: UserRows = { tasks: [], toggles: [] };
  if (source) {
    try {
      // A database this version never started holds no tasks yet.
      if (await hasTable(source, 'subconscious_tasks')) rows = { tasks: await readTasks(source), toggles: await readToggles(source) };
    } catch (err) {
      throw new SubconsciousError('store_unavailable', `Could not read the tasks in ${source.location}: ${describeError(err)}`, {
        cause: err,
        hint: 'simulate only reads that database: check that it is reachable, and run `subconscious status` once to upgrade a database made by an older version.',
      });
    } finally {
      await source.close().catch(() => undefined);
    }
  }
  const store = await openStore({ sqliteFile: ':memory:' });
  try {
    // Chunked: SQLite caps bound parameters per statement.
    for (let i = 0; i < rows.tasks.length; i += 50) {
      await store.db
        .insertInto('subconscious_tasks')
        .values(rows.tasks.slice(i, i + 50))
        .execute();
    }
    for (const row of rows.toggles) await store.db.insertInto('instance_state').values(row).execute();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { store, imported: { from: source ? source.location : null, tasks: rows.tasks.length, toggles: rows.toggles.length } };
}

/** Every task (system defaults, HEARTBEAT.md lines, user tasks) as the user's database has it. */
async function readTasks(source: Store): Promise<CopiedTask[]> {
  const rows = await source.db.selectFrom('subconscious_tasks').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map((row) => {
    const copy: Record<string, unknown> = {};
    for (const column of [...TASK_COLUMNS, ...LATER_COLUMNS]) if (column in row) copy[column] = row[column];
    return copy as CopiedTask;
  });
}

/** The worlds' on/off switches from the page (`<world>:enabled`): a world switched off stays off. */
function readToggles(source: Store) {
  return source.db.selectFrom('instance_state').select(['key', 'value', 'updated_at']).where('key', 'like', '%:enabled').execute();
}
