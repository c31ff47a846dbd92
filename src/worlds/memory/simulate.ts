/**
 * The memory module's side of `subconscious simulate`.
 *
 * Copy: what the sources last synced — the namespaces, the change sequence, each folder's file
 * list (size, mtime, hash) and the memory world's baseline — but not the documents' text. The
 * simulated daemon then looks at the folders (reading, never writing) as a real one does: files
 * it already synced are seen unchanged by their size and mtime, so only changes not synced yet
 * become memory changes (which cost a conscious run and a memory review). Without a database
 * (a new workspace) the folders are read whole, as a first start would.
 *
 * Session: the dry-run decision agent does nothing ("Nothing to do."); the figures are the
 * sources, their documents and the reviews asked for.
 */
import type { InsertObject, Insertable, Kysely } from 'kysely';
import type { SimulateHooks, SimulationSession } from '../../engine/index.js';
import type { memoryContract } from '../../protocol/memory.js';
import type { MemoryWorldSettings } from './config.js';
import type { MemoryModuleTables } from './module.js';
import { DECISION_SYSTEM } from './prompts.js';

type Methods = (typeof memoryContract)['methods'];

const CHUNK = 50;
const firstLine = (s: string) => s.split('\n')[0]!;

export const memorySimulation: SimulateHooks<MemoryWorldSettings, MemoryModuleTables, Methods> = {
  async copy(from, to) {
    const namespaces = await from.selectFrom('memory_namespaces').selectAll().execute();
    await insertChunks(to, 'memory_namespaces', namespaces);
    const state = await from.selectFrom('memory_state').selectAll().where('id', '=', 1).executeTakeFirst();
    if (state) await to.updateTable('memory_state').set({ seq: state.seq }).where('id', '=', 1).execute();
    const files = await from.selectFrom('memory_source_files').selectAll().execute();
    await insertChunks(to, 'memory_source_files', files);
    const baseline = await from.selectFrom('memory_checkpoints').selectAll().where('label', '=', 'memory').orderBy('seq', 'desc').limit(1).execute();
    await insertChunks(to, 'memory_checkpoints', baseline);
    return { copied: files.length, what: 'memory source files' };
  },

  session(): SimulationSession<Methods> {
    let reviews = 0;
    return {
      reply(request) {
        if (!request.system.includes(firstLine(DECISION_SYSTEM))) return undefined;
        reviews++;
        return 'Nothing to do.';
      },
      async finish(call) {
        const [namespaces, sources] = await Promise.all([call('memory.namespaces'), call('memory.sources')]);
        return {
          sources: sources.length,
          namespaces: namespaces.length,
          documents_synced: sources.reduce((n, s) => n + s.since_start.added + s.since_start.modified + s.since_start.removed, 0),
          reviews,
        };
      },
      print(figures, print) {
        const n = (x: unknown) => Number(x).toLocaleString('en-US');
        const sources = Number(figures.sources);
        print(
          `  memory: ${sources ? `${n(sources)} folder source${sources === 1 ? '' : 's'}, ${n(figures.documents_synced)} document change${figures.documents_synced === 1 ? '' : 's'} synced` : 'no folder source configured'}; ${n(figures.reviews)} memory review${figures.reviews === 1 ? '' : 's'}`,
        );
      },
      assumptions:
        'Memory: your folders are read (never written) as the daemon would read them, starting from what it last synced, so only changes not synced yet cost a conscious run and a memory review; after that no file changes and nothing is pushed over RPC, so both stay quiet; the dry-run decision agent does nothing.',
    };
  },
};

async function insertChunks<T extends keyof MemoryModuleTables & string>(
  db: Kysely<MemoryModuleTables>,
  table: T,
  rows: readonly Insertable<MemoryModuleTables[T]>[],
): Promise<void> {
  // Chunked: SQLite caps bound parameters per statement.
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db
      .insertInto(table)
      .values(rows.slice(i, i + CHUNK) as InsertObject<MemoryModuleTables, T>[])
      .execute();
  }
}
