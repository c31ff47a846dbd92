/**
 * `<workspace>/.subconscious/` holds what only its owner may read: the token, the SQLite
 * database (tasks, log, the model ledger) and `daemon.json`. The folder is 0700 and every file
 * in it 0600. Folders and files made by older versions (or with a loose umask) are tightened at
 * start, one log line each, so the owner learns that they were readable by others until now.
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../core/logger.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

export interface Tightened {
  path: string;
  from: string;
  to: string;
}

export function privateDir(workspace: string): string {
  return path.join(workspace, '.subconscious');
}

/**
 * Create `.subconscious/` (0700) if missing; tighten it and every regular file directly inside.
 * Returns what was tightened (each also logged as a warning). Files this user does not own are
 * left as they are, with a warning that says what to do.
 */
export function securePrivateFolder(workspace: string, log: Logger): Tightened[] {
  const dir = privateDir(workspace);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const done: Tightened[] = [];
  tighten(dir, PRIVATE_DIR_MODE, log, done);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isFile()) tighten(path.join(dir, entry.name), PRIVATE_FILE_MODE, log, done);
  }
  return done;
}

function tighten(target: string, mode: number, log: Logger, done: Tightened[]): void {
  let current: number;
  try {
    current = statSync(target).mode & 0o777;
  } catch {
    return; // removed in between (a WAL file at checkpoint)
  }
  if ((current & ~mode) === 0) return;
  const change = { path: target, from: octal(current), to: octal(current & mode) };
  try {
    chmodSync(target, current & mode);
  } catch (err) {
    log.warn(
      { ...change, err: (err as Error).message },
      `could not make ${target} private (mode ${change.from}); make it readable by its owner only: chmod ${change.to.slice(1)} ${target}`,
    );
    return;
  }
  log.warn(change, `tightened ${target} from mode ${change.from} to ${change.to}: it was readable by other users of this machine`);
  done.push(change);
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
