/**
 * The workspace a command names must already be a folder. Opening the app creates
 * `.subconscious/`, a database and the system tasks, so a mistyped `--workspace` would otherwise
 * quietly start a second, empty workspace.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { SubconsciousError } from '../core/errors.js';

/** A mistake in how the command was called: exit code 2, as for any usage error. */
export class UsageError extends SubconsciousError {
  constructor(message: string, hint: string) {
    super('invalid_params', message, { hint });
  }
}

export function requireWorkspace(dir: string): void {
  const resolved = path.resolve(dir);
  const stat = statSync(resolved, { throwIfNoEntry: false });
  if (!stat) throw new UsageError(`workspace ${resolved} does not exist`, `create it first (mkdir -p ${resolved}) or pass an existing folder with --workspace`);
  if (!stat.isDirectory())
    throw new UsageError(`workspace ${resolved} is a file, not a folder`, `pass its folder (${path.dirname(resolved)}) with --workspace`);
}
