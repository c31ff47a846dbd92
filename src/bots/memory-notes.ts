/**
 * `MEMORY:` and `TEAM_MEMORY:` lines into the memory store (issue 11 §2: "into the memory store
 * once it exists"). Each line is already kept as a bots note; when the memory module is there,
 * it also becomes a document (`noteDocument`): a bot's own lines in `bot:<name>`, team lines in
 * `bots:team`, one document per distinct text (the same line twice is the same document).
 */
import { describeError, type Logger } from '../core/index.js';
import { noteDocument, type MemoryStore } from '../memory/index.js';
import type { ControlLinesInfo } from './runtime.js';

/** What the bots host asks of the memory store. */
export type MemoryNoteSink = Pick<MemoryStore, 'storeDocument'>;

export const TEAM_NAMESPACE = 'bots:team';

/** A bot's own notes live in its namespace (names are unique @handles). */
export function botNamespace(botName: string): string {
  return `bot:${botName}`;
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
        await sink.storeDocument(noteDocument({ namespace, text: line.text, author: `@${name}`, at: info.at }), {
          label: team ? 'Team notes (bots)' : `Notes of @${name}`,
          kind: 'bots',
        });
      } catch (err) {
        deps.log.warn({ err: describeError(err), namespace }, 'a bot memory note could not be stored in the memory store (it is kept as a bots note)');
      }
    }
  };
}
