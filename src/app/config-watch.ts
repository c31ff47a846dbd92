/**
 * A hand edit of subconscious.toml applies without a restart (issue 23). The daemon watches the
 * workspace folder (not the file: editors that save by writing a new file and renaming it over
 * the old one replace the file's inode), waits until the edits settle (300 ms without another),
 * and reads the file when its bytes changed (their hash). The file is parsed and validated by the
 * code the start uses (`load`), then compared with what the daemon runs with: only a difference
 * is applied, so this worker's own write (`config_set`, a change adopted from another worker),
 * already in effect when the file is read (the same queue), changes nothing and says nothing —
 * and a hand edit saved in the same moment as a page's change is not lost.
 *
 * - valid: every changed key that can change live is applied the way `config_set` applies it
 *   (same live effects, same `config.changed`, which the page and the other workers take); the
 *   others are listed as needing a restart (`subconscious.config`'s `needs_restart`);
 * - invalid (bad TOML, an unknown or ill-typed key): the daemon keeps running on the last good
 *   settings, logs one line naming the file, where and what, and the page shows it
 *   (`file_error`) until the file is fixed;
 * - gone (deleted, or between an editor's delete and write): nothing changes until it is back.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../core/index.js';
import { CONFIG_FILE, type Config } from './config.js';
import type { LiveConfig } from './config-live.js';

export interface ConfigWatcherDeps {
  live: LiveConfig;
  /** The file read and validated as at start (the same environment and command line): throws when it cannot be used. */
  load: () => Config;
  log: Logger;
  /** Quiet time after the last change before the file is read. */
  debounceMs?: number;
}

export class ConfigWatcher {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastHash: string | null;
  private running: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly d: ConfigWatcherDeps) {
    this.lastHash = hashFile(d.live.file);
  }

  start(): void {
    if (this.watcher || this.closed) return;
    const folder = path.dirname(this.d.live.file);
    try {
      this.watcher = watch(folder, { persistent: false }, (_event, name) => {
        // Some platforms give no name: then any change in the folder is looked at (the hash says whether it was the file).
        if (name !== null && name.toString() !== CONFIG_FILE) return;
        this.schedule();
      });
    } catch (err) {
      this.d.log.warn({ err, folder }, `${this.d.live.file} cannot be watched: a hand edit applies at the next start`);
      return;
    }
    this.watcher.on('error', (err) => this.d.log.warn({ err }, `watching ${this.d.live.file} stopped: a hand edit applies at the next start`));
  }

  /** Read the file now if it changed (the watcher calls this after the quiet time; tests may too). */
  check(): Promise<void> {
    this.running = this.running.then(() => this.checkNow()).catch((err: unknown) => this.d.log.error({ err }, `${this.d.live.file} could not be applied`));
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.watcher?.close();
    this.watcher = null;
    await this.running;
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.check();
    }, this.d.debounceMs ?? 300);
  }

  private async checkNow(): Promise<void> {
    if (this.closed) return;
    const file = this.d.live.file;
    const hash = hashFile(file);
    if (hash === this.lastHash) return;
    this.lastHash = hash;
    // Gone: an editor between removing and writing it, or a person who removed it. Nothing changes until it is back.
    if (hash === null) return void this.d.log.info(`${file} was removed: the daemon keeps its settings (the file is read again when it is back)`);
    let next: Config;
    try {
      next = this.d.load();
    } catch (err) {
      const reason = (err as Error).message;
      const shown = reason.includes(file) ? reason : `${file}: ${reason}`;
      this.d.log.warn(`${shown} — the daemon keeps running on the last good settings`);
      this.d.live.fileError(shown);
      return;
    }
    try {
      const { applied, needsRestart } = await this.d.live.fromFile(next);
      if (applied.length) this.d.log.info({ keys: applied }, `${file} was edited: applied without a restart`);
      if (needsRestart.length) this.d.log.warn({ keys: needsRestart }, `${file} was edited: ${needsRestart.join(', ')} apply at the next start`);
    } catch (err) {
      const shown = `${file}: ${(err as Error).message}`;
      this.d.log.warn(`${shown} — the daemon keeps running on the last good settings`);
      this.d.live.fileError(shown);
    }
  }
}

/** The hash of a file's bytes (null: there is no file). */
function hashFile(file: string): string | null {
  if (!existsSync(file)) return null;
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return null;
  }
}
