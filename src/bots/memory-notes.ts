/**
 * `MEMORY:` and `TEAM_MEMORY:` lines into the memory store (issue 11 §2: "into the memory store
 * once it exists"). Each line is already kept as a bots note; when the memory module is there,
 * it also becomes a document: a bot's own lines in `bot:<name>`, team lines in `bots:team`, one
 * document per distinct text (the same line twice is the same document).
 *
 * `bots/` may not import `memory/` (DESIGN.md "Layers": they are siblings), so this file names
 * the part of the memory store it uses — `storeDocument`, which `MemoryStore` has — under the
 * memory store's own service key id, `memory.store` (src/memory/services.ts). The document's
 * shape is `noteDocument`'s (src/memory/adapters.ts): `note:` + sha256 of the flattened,
 * lower-cased text as its external id, its first 80 characters as its title.
 */
import { createHash } from 'node:crypto';
import { describeError, serviceKey, type Logger } from '../core/index.js';
import type { ControlLinesInfo } from './runtime.js';

/** What the bots host asks of the memory store. */
export interface MemoryNoteSink {
  storeDocument(
    doc: {
      namespace: string;
      external_id: string;
      title: string;
      body: string;
      metadata?: Record<string, unknown> | undefined;
      source_kind?: string | undefined;
    },
    info?: { label?: string | undefined; kind?: string | undefined },
  ): Promise<unknown>;
}

/** The memory store's key (same id as `MemoryStoreKey`), typed by the part the bots host uses. */
export const MemoryNotesKey = serviceKey<MemoryNoteSink>('memory.store');

export const TEAM_NAMESPACE = 'bots:team';
const TITLE_CHARS = 80;

/** A bot's own notes live in its namespace (names are unique @handles). */
export function botNamespace(botName: string): string {
  return `bot:${botName}`;
}

/** One note as a memory document (the same text is the same document, as `noteDocument` does). */
export function noteDoc(namespace: string, text: string, author: string, at: number) {
  const body = text.trim();
  const flat = body.replace(/\s+/g, ' ');
  return {
    namespace,
    external_id: `note:${createHash('sha256').update(flat.toLowerCase()).digest('hex').slice(0, 32)}`,
    title: flat.length <= TITLE_CHARS ? flat : `${flat.slice(0, TITLE_CHARS - 1)}…`,
    body,
    source_kind: 'note',
    metadata: { author, noted_at: at },
  };
}

/**
 * A control-lines listener (`host.heartbeat.onControlLines` / `runtime.onControlLines`) that
 * writes memory lines to the store `sink()` returns — looked up at each settle, so the memory
 * module may start after this one, or not be there at all. A failed write is logged; the note
 * is still kept in `bots_notes`.
 */
export function memoryNotesListener(deps: {
  sink: () => MemoryNoteSink | undefined;
  botName: (botId: string) => Promise<string | undefined>;
  log: Logger;
}): (info: ControlLinesInfo) => Promise<void> {
  return async (info) => {
    const lines = info.controls.filter((c): c is { kind: 'memory' | 'team_memory'; text: string } => c.kind === 'memory' || c.kind === 'team_memory');
    if (lines.length === 0) return;
    const sink = deps.sink();
    if (!sink) return;
    const name = (await deps.botName(info.botId)) ?? info.botId;
    for (const line of lines) {
      const team = line.kind === 'team_memory';
      const namespace = team ? TEAM_NAMESPACE : botNamespace(name);
      try {
        await sink.storeDocument(noteDoc(namespace, line.text, `@${name}`, info.at), {
          label: team ? 'Team notes (bots)' : `Notes of @${name}`,
          kind: 'bots',
        });
      } catch (err) {
        deps.log.warn({ err: describeError(err), namespace }, 'a bot memory note could not be stored in the memory store (it is kept as a bots note)');
      }
    }
  };
}
