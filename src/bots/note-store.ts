/**
 * Notes: the control lines a bot ended an answer with (MEMORY:, TEAM_MEMORY:, FOLLOWUP:,
 * BLOCKED:, RECOMMENDED ACTION:, a refused HANDOFF:, unreadable ones). Kept so nothing a bot
 * asked the host to remember is lost before the memory store exists to take them.
 */
import type { Kysely } from 'kysely';
import type { IdGen } from '../core/index.js';
import type { Note, NoteKind } from '../protocol/bots.js';
import { toNote } from './rows.js';
import type { BotsTables } from './tables.js';

/** The longest note kept (a control line is one line; this bounds a runaway one). */
export const NOTE_MAX_CHARS = 2000;

export class NoteStore {
  constructor(
    private readonly db: Kysely<BotsTables>,
    private readonly ids: IdGen,
  ) {}

  async add(n: { botId: string; threadId: string; taskId: string | null; kind: NoteKind; text: string; at: number }): Promise<Note> {
    const row = {
      id: this.ids(),
      bot_id: n.botId,
      thread_id: n.threadId,
      task_id: n.taskId,
      kind: n.kind,
      text: n.text.length > NOTE_MAX_CHARS ? `${n.text.slice(0, NOTE_MAX_CHARS - 1)}…` : n.text,
      created_at: n.at,
    };
    await this.db.insertInto('bots_notes').values(row).execute();
    return toNote(row);
  }

  /** Newest first. */
  async list(f: { botId?: string; kind?: NoteKind; limit?: number } = {}): Promise<Note[]> {
    let q = this.db.selectFrom('bots_notes').selectAll();
    if (f.botId) q = q.where('bot_id', '=', f.botId);
    if (f.kind) q = q.where('kind', '=', f.kind);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(f.limit ?? 200)
      .execute();
    return rows.map(toNote);
  }
}
