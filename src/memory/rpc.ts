/**
 * The memory store's RPC handlers (`memory.store_document`, `memory.recall`, …), for any host
 * that pushes its own sources. The memory world adds its own methods beside these
 * (`memoryRpcHandlers` in `src/worlds/memory/`).
 */
import { SubconsciousError } from '../core/errors.js';
import type { Handlers } from '../protocol/contract.js';
import type { MemorySourceMethods, MemoryStoreMethods } from '../protocol/memory.js';
import { memorySourceSchema, type MemorySourceConfig } from './config.js';
import type { MemorySources } from './sources/manager.js';
import type { MemoryStore } from './store.js';

export type MemoryStoreHandlers = Handlers<MemoryStoreMethods>;

/** The configured source that fills a namespace, if one does (its files are the truth of it). */
export type SourceOwner = (namespace: string) => { label: string; location: string; kind: string } | undefined;

export function memoryStoreHandlers(store: MemoryStore, owner: SourceOwner = () => undefined): MemoryStoreHandlers {
  // A source's sync skips what it has seen (a file's size and mtime, a message's UID), so a write here would never be repaired.
  const writable = (namespace: string, verb: string) => {
    const source = owner(namespace);
    if (!source) return;
    throw new SubconsciousError(
      'forbidden',
      `Namespace "${namespace}" is filled by the ${source.kind} source "${source.label}" (${source.location}): RPC cannot ${verb} its documents.`,
      {
        hint:
          source.kind === 'folder'
            ? `Edit, add or remove the files in ${source.location} instead (memory.sync picks them up), or push to a namespace of your own.`
            : `Change them where they live (${source.location}; memory.sync picks it up), or push to a namespace of your own.`,
      },
    );
  };
  return {
    'memory.store_document': (p) => {
      writable(p.namespace, 'store');
      return store.storeDocument(
        { namespace: p.namespace, external_id: p.external_id, title: p.title, body: p.body, metadata: p.metadata, source_kind: p.source_kind },
        { label: p.namespace_label, kind: p.namespace_kind },
      );
    },
    'memory.delete_document': async (p) => {
      writable(p.namespace, 'delete');
      return { deleted: await store.deleteDocument(p.namespace, p.external_id) };
    },
    'memory.get_document': async (p) => {
      const doc = await store.getDocument(p.namespace, p.external_id);
      if (!doc || doc.deleted_at !== null) {
        throw new SubconsciousError('not_found', `No document "${p.external_id}" in namespace "${p.namespace}".`, {
          hint: 'memory.list_documents shows what a namespace holds.',
        });
      }
      return doc;
    },
    'memory.list_documents': (p) => store.listDocuments({ namespace: p.namespace, limit: p.limit ?? 100, offset: p.offset ?? 0 }),
    'memory.recall': async (p) => ({ hits: await store.recall({ query: p.query, namespace: p.namespace, limit: p.limit ?? 10 }) }),
    'memory.namespaces': () => store.namespaces(),
  };
}

/** `memory.sources` and `memory.sync`: the configured sources (`[[worlds.memory.sources]]`). */
export function memorySourcesHandlers(sources: MemorySources): Handlers<MemorySourceMethods> {
  return {
    'memory.sources': () => sources.status(),
    'memory.sources_test': async (p) => {
      const failure = p.source ? await sources.test(parseSource(p.source)) : await sources.testNamespace(p.namespace!);
      return { ok: failure === null, failure, message: failure ? `${failure.kind} failed: ${failure.message}. ${failure.hint}` : 'Connection works.' };
    },
    'memory.sources_add': async (p) => {
      const config = parseSource(p.source);
      const { failure } = await sources.add(config, { force: p.force });
      return {
        namespace: config.namespace,
        failure,
        message: failure
          ? `Added ${config.namespace} despite its failed test (${failure.kind}: ${failure.message}); it retries with backoff.`
          : `Added ${config.namespace}; its first sync is running (memory.synced tells how it went).`,
      };
    },
    'memory.sources_pause': async (p) => {
      await sources.pause(p.namespace, p.paused);
      return {
        namespace: p.namespace,
        paused: p.paused,
        message: p.paused ? `Paused ${p.namespace}: no syncs until resumed; its documents stay.` : `Resumed ${p.namespace}: syncing now.`,
      };
    },
    'memory.sources_resync': async (p) => {
      await sources.resync(p.namespace);
      return { namespace: p.namespace, message: `Reading ${p.namespace} again from the start; what is gone becomes a removal.` };
    },
    'memory.sources_remove': async (p) => {
      const r = await sources.remove(p.namespace, { keepDocuments: p.keep_documents });
      return {
        namespace: p.namespace,
        ...r,
        message: p.keep_documents
          ? `Removed the source ${p.namespace}; its ${r.kept_documents} documents stay as a plain namespace (memory.delete_document may remove them).`
          : `Removed the source ${p.namespace} and its ${r.removed_documents} documents (removals in the memory diff).`,
      };
    },
    'memory.sync': (p) => {
      const started = sources.syncNow(p.namespace);
      return {
        started,
        message: started.length
          ? `Syncing ${started.join(', ')}; memory.synced tells how it went.`
          : 'No memory source is configured: add one under [[worlds.memory.sources]] in subconscious.toml, or push documents with memory.store_document.',
      };
    },
  };
}

/** A source from RPC validated as the TOML's would be: a typed error names the field. */
function parseSource(raw: Record<string, unknown>): MemorySourceConfig {
  const parsed = memorySourceSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new SubconsciousError('invalid_params', `source.${issue.path.join('.') || 'kind'}: ${issue.message}`, {
    hint: 'Give the source as in [[worlds.memory.sources]] (README "Memory sources"); secrets by password_env or password_file.',
  });
}
