/**
 * What other modules take from the memory store, in their own shapes:
 *
 * - `recentMemory(store)`: the tasks world's `MemorySource` (`recent(since, limit)`), documents
 *   updated in a tick's window for its situation report;
 * - `noteDocument(...)`: a bot's `MEMORY:` / `TEAM_MEMORY:` line as a document, deduplicated by
 *   its text, for `store.storeDocument`.
 */
import { sha256Hex } from './hash.js';
import type { DocumentInput, MemoryStore } from './store.js';

export interface RecentMemoryItem {
  title: string;
  text: string;
  updatedAt: number;
}

export function recentMemory(store: MemoryStore): { recent(since: number | null, limit: number): Promise<RecentMemoryItem[]> } {
  return {
    async recent(since, limit) {
      const docs = await store.recent({ since, limit });
      return docs.map((d) => ({ title: d.title, text: d.body, updatedAt: d.updated_at }));
    },
  };
}

const NOTE_TITLE_CHARS = 80;

/** A note (one line a bot asked to remember) as a document; the same text is the same document. */
export function noteDocument(opts: { namespace: string; text: string; author?: string | undefined; at?: number | undefined }): DocumentInput {
  const text = opts.text.trim();
  const flat = text.replace(/\s+/g, ' ');
  return {
    namespace: opts.namespace,
    external_id: `note:${sha256Hex(flat.toLowerCase()).slice(0, 32)}`,
    title: flat.length <= NOTE_TITLE_CHARS ? flat : `${flat.slice(0, NOTE_TITLE_CHARS - 1)}…`,
    body: text,
    source_kind: 'note',
    metadata: { ...(opts.author ? { author: opts.author } : {}), ...(opts.at !== undefined ? { noted_at: opts.at } : {}) },
  };
}
