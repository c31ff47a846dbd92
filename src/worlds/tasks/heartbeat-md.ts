/**
 * `HEARTBEAT.md` in the workspace: one system task per `- ` line (seed 1). Headers, blank
 * lines, other text and duplicate lines are ignored. The file is re-read only when its size,
 * mtime or content hash changed since the last read.
 *
 * A line's task is read-only. A line marked `- [write] …` asks for write rights, and the page
 * shows it as pending until a person confirms (issue 9: write rights are a person's explicit
 * choice; a file is untrusted text, and words like "write" or "send" in a line are not a choice):
 *
 *   - Check the deploy queue                       read-only: analyses, recommends, asks
 *   - [write] Send the daily digest to #team       read-only until confirmed; then may carry out the writes its words name
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export const HEARTBEAT_FILE = 'HEARTBEAT.md';
export const MAX_TITLE_CHARS = 500;

/** The key two lines share when they are "the same task": case and spacing ignored. */
export function titleKey(title: string): string {
  return title.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase();
}

export function heartbeatTaskId(title: string): string {
  return `heartbeat:${createHash('sha256').update(titleKey(title)).digest('hex').slice(0, 20)}`;
}

/** One task line: its title, and whether the line grants write rights (`- [write] …`). */
export interface HeartbeatLine {
  title: string;
  write: boolean;
}

/** The marker that grants a line's task write rights (case-insensitive, before the title). */
const WRITE_MARKER = /^\[write\]\s+/i;

/** The task lines of a HEARTBEAT.md text, first occurrence of a title wins, in file order. */
export function parseHeartbeatLines(text: string): HeartbeatLine[] {
  const seen = new Set<string>();
  const lines: HeartbeatLine[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimStart();
    if (!line.startsWith('- ')) continue;
    let rest = line
      .slice(2)
      .replace(/^\[[ xX]\]\s+/, '') // a Markdown checkbox is not part of the task
      .trimStart();
    const write = WRITE_MARKER.test(rest);
    if (write) rest = rest.replace(WRITE_MARKER, '');
    const title = rest
      // Control characters are not text a person wrote: they go, as from any other title.
      .replace(/\p{Cc}/gu, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, MAX_TITLE_CHARS);
    if (!/[^\p{Cf}\p{Z}\s]/u.test(title)) continue;
    const key = titleKey(title);
    if (seen.has(key)) continue;
    seen.add(key);
    lines.push({ title, write });
  }
  return lines;
}

/** The task titles of a HEARTBEAT.md text (see `parseHeartbeatLines`). */
export function parseHeartbeatMd(text: string): string[] {
  return parseHeartbeatLines(text).map((l) => l.title);
}

export interface HeartbeatSnapshot {
  /** False when the file does not exist (every imported task's line has then disappeared). */
  exists: boolean;
  lines: HeartbeatLine[];
  hash: string | null;
  mtimeMs: number | null;
}

/** Watches one workspace's HEARTBEAT.md by stat and hash; `read()` says whether it changed. */
export class HeartbeatFile {
  readonly file: string;
  private last: { size: number; mtimeMs: number; hash: string; lines: HeartbeatLine[] } | null | undefined;

  constructor(workspace: string) {
    this.file = path.join(workspace, HEARTBEAT_FILE);
  }

  /**
   * `changed` is true on the first call and whenever the file appeared, vanished or its content
   * changed. Throws when the file exists but cannot be read.
   */
  async read(): Promise<{ changed: boolean; snapshot: HeartbeatSnapshot }> {
    let info: { size: number; mtimeMs: number } | null = null;
    try {
      const s = await stat(this.file);
      if (s.isFile()) info = { size: s.size, mtimeMs: s.mtimeMs };
    } catch (err) {
      // Only a missing file means its lines vanished; any other error (a symlink loop, no
      // permission) says nothing about them, so the caller keeps the tasks as imported.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    if (!info) {
      const changed = this.last !== null;
      this.last = null;
      return { changed, snapshot: { exists: false, lines: [], hash: null, mtimeMs: null } };
    }
    const prev = this.last;
    if (prev && prev.size === info.size && prev.mtimeMs === info.mtimeMs) {
      return { changed: false, snapshot: { exists: true, lines: prev.lines, hash: prev.hash, mtimeMs: prev.mtimeMs } };
    }
    const text = await readFile(this.file, 'utf8');
    const hash = createHash('sha256').update(text).digest('hex');
    const lines = prev && prev.hash === hash ? prev.lines : parseHeartbeatLines(text);
    this.last = { ...info, hash, lines };
    return { changed: !prev || prev.hash !== hash, snapshot: { exists: true, lines, hash, mtimeMs: info.mtimeMs } };
  }

  /**
   * Whether `read()` would surely find the file as it last read it (same size and mtime, or
   * still missing): false when it never read it or cannot tell. A synchronous stat: the tasks
   * world's probe asks on every tick, and an async one costs ten times the CPU (the thread pool).
   * Throws as `read()` does when the file exists but cannot be stat'ed.
   */
  unchanged(): boolean {
    const prev = this.last;
    if (prev === undefined) return false;
    const s = statSync(this.file, { throwIfNoEntry: false });
    if (!s?.isFile()) return prev === null; // missing (or not a file) then and now
    return prev !== null && prev.size === s.size && prev.mtimeMs === s.mtimeMs;
  }

  /** Forget what was read (the next `read()` imports again). */
  reset(): void {
    this.last = undefined;
  }
}
