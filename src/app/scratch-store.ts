/**
 * `simulate`'s store: a fresh in-memory SQLite database, migrated like any other, holding a copy
 * of what each module starts from (the tasks world: the person's standing tasks) and the worlds'
 * on/off toggles, read from their configured database read-only when it exists. That database is
 * never written; what the simulated ticks write stays in memory and is gone when the store closes.
 */
import { SubconsciousError, describeError } from '../core/errors.js';
import type { EngineTables, WorldModule } from '../engine/index.js';
import { hasTable, openReadOnlyStore, openStore, tablesView, type Store } from '../store/index.js';
import type { Config } from './config.js';

export interface ScratchStore {
  store: Store;
  /** Where the rows came from (null: no database yet) and what was copied, per module. */
  imported: { from: string | null; copied: Array<{ module: string; what: string; count: number }>; toggles: number };
}

export async function openScratchStore(workspace: string, config: Config, modules: readonly WorldModule[]): Promise<ScratchStore> {
  const migrations = modules.flatMap((m) => (m.tables ? [m.tables.migrations] : []));
  const store = await openStore({ sqliteFile: ':memory:', migrations });
  const source = await openReadOnlyStore({ workspace, databaseUrl: config.database.url }).catch(async (err) => {
    await store.close();
    throw err;
  });
  const imported: ScratchStore['imported'] = { from: source?.location ?? null, copied: [], toggles: 0 };
  if (!source) return { store, imported };
  try {
    for (const m of modules) {
      const copy = m.simulate?.copy;
      // A database this version never started lacks the module's tables: nothing to copy yet.
      if (!copy || !(await hasTables(source, m.tables?.names ?? []))) continue;
      const { copied, what } = await copy(source.db, store.db);
      imported.copied.push({ module: m.kind, what, count: copied });
    }
    if (await hasTable(source, 'instance_state')) imported.toggles = await copyToggles(source, store);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw new SubconsciousError('store_unavailable', `Could not read ${source.location}: ${describeError(err)}`, {
      cause: err,
      hint: 'simulate only reads that database: check that it is reachable, and run `subconscious status` once to upgrade a database made by an older version.',
    });
  } finally {
    await source.close().catch(() => undefined);
  }
  return { store, imported };
}

async function hasTables(store: Store, names: readonly string[]): Promise<boolean> {
  for (const name of names) if (!(await hasTable(store, name))) return false;
  return true;
}

/** The worlds' on/off switches from the page (`<world>:enabled`): a world switched off stays off. */
async function copyToggles(source: Store, target: Store): Promise<number> {
  const rows = await tablesView<EngineTables>(source.db)
    .selectFrom('instance_state')
    .select(['key', 'value', 'updated_at'])
    .where('key', 'like', '%:enabled')
    .execute();
  for (const row of rows) await tablesView<EngineTables>(target.db).insertInto('instance_state').values(row).execute();
  return rows.length;
}
