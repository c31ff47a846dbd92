/**
 * Settings changed while the daemon runs (issue 23 §8, `subconscious.config_set`). A key can be
 * changed when a world module lists it as live (`WorldModule.live`: the module reads it at each
 * use) and neither the environment nor the command line set it (they win over the file). A change
 * is validated against the module's section first (a bad value changes nothing), written to
 * subconscious.toml as a one-key edit that keeps the rest of the file and its comments, then
 * handed to the running module; a new interval moves the world's next tick at once. A world's
 * `enabled` is live too: false stops its ticks at once, true starts them (and its page switch).
 *
 * Every worker on one store agrees: the `config.changed` event carries the value and the worker
 * that set it, and a worker that reads another's (through the cluster event feed) adopts it the
 * same way — checked against its own section, written to its own subconscious.toml unless that
 * already holds it (a shared workspace), applied in memory. A key its environment or command line
 * sets stays as that says (logged).
 */
import path from 'node:path';
import { SubconsciousError, type EventBus, type Logger, type StoredEvent } from '../core/index.js';
import type { ModuleInstance, Registry, WorldModule } from '../engine/index.js';
import type { ConfigValue, ProductEvents } from '../protocol/index.js';
import { CONFIG_FILE, originsOf, setOrigin, type Config } from './config.js';
import { readTomlKey, writeTomlKey, type TomlScalar } from './config-edit.js';
import { effectiveConfig } from './config-effective.js';

export interface LiveConfigDeps {
  config: Config;
  workspace: string;
  modules: readonly WorldModule[];
  /** Each module's running instance, by kind. */
  instances: ReadonlyMap<string, ModuleInstance>;
  registry: Registry;
  events: EventBus<ProductEvents>;
  /** This worker's id: its own `config.changed` events are not adopted again. */
  worker: string;
  log: Logger;
}

/** Why a world is off when its section says `enabled = false` (its status and its refusals say it). */
export const fileOffReason = (kind: string) => `[worlds.${kind}] enabled = false in subconscious.toml`;

interface Target {
  module: WorldModule;
  instance: ModuleInstance;
  setting: string;
}

const WORLD_KEY = /^worlds\.([a-z][a-z0-9_-]*)\.([a-z][a-z0-9_]*)$/;

/** What the last hand edit of subconscious.toml left (the watcher's findings, `subconscious.config` shows them). */
export interface FileState {
  /** The file does not parse or validate: the daemon keeps the last good settings. */
  error: string | null;
  /** Keys the file now sets differently from what the daemon runs with, which apply at the next start. */
  needsRestart: string[];
}

export class LiveConfig {
  /** One change at a time: each edit reads the file the previous one wrote. */
  private queue: Promise<unknown> = Promise.resolve();
  private state: FileState = { error: null, needsRestart: [] };

  constructor(private readonly d: LiveConfigDeps) {}

  get file(): string {
    return path.join(this.d.workspace, CONFIG_FILE);
  }

  /** Whether `subconscious.config_set` takes this key now. */
  editable(key: string): boolean {
    return this.target(key) !== null && this.lockedBy(key) === null;
  }

  /** The effective configuration, with which keys the page may change. */
  effective(file: string | null) {
    return { ...effectiveConfig(this.d.config, file, (key) => this.editable(key)), file_error: this.state.error, needs_restart: this.state.needsRestart };
  }

  get fileState(): FileState {
    return this.state;
  }

  /** The file could not be read as a configuration; said once per change, as a `config.file` event (a good read clears it). */
  fileError(error: string | null): void {
    // While the file cannot be read, what it would need a restart for is not known: only the error is said.
    this.setState({ error, needsRestart: error === null ? this.state.needsRestart : [] });
  }

  /**
   * A hand edit of subconscious.toml, already parsed and validated as at start (`next`): every key
   * it changed that can change live is applied the way `config_set` applies it (the same live
   * effects, one `config.changed` each, which other workers adopt), without writing the file
   * again; the others are listed as needing a restart. Nothing applies unless every change is valid.
   */
  fromFile(next: Config): Promise<{ applied: string[]; needsRestart: string[] }> {
    const run = this.queue.then(() => this.fromFileNow(next));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async fromFileNow(next: Config): Promise<{ applied: string[]; needsRestart: string[] }> {
    const now = leaves(this.d.config);
    const then = leaves(next);
    const changed = [...new Set([...now.keys(), ...then.keys()])].filter((k) => now.get(k) !== then.get(k)).sort();
    const live: Array<{ target: Target; key: string; value: TomlScalar }> = [];
    const needsRestart: string[] = [];
    for (const key of changed) {
      const target = this.target(key);
      const value = valueAt(next, key);
      if (target && this.lockedBy(key) === null && isScalar(value)) live.push({ target, key, value });
      else needsRestart.push(key);
    }
    // Checked first, all of them: a value the module refuses leaves everything as it was.
    const settings = Object.fromEntries(Object.entries(this.d.config.worlds).map(([k, s]) => [k, { ...s.settings }]));
    const parsed = live.map(({ target, key, value }) => {
      const kind = target.module.kind;
      if (target.setting === 'enabled') return this.checked(target, key, value);
      const result = target.module.configSchema.safeParse({ ...settings[kind], [target.setting]: value });
      if (!result.success)
        throw new SubconsciousError('config_invalid', `${key}: ${result.error.issues[0]?.message ?? 'not a valid value'}`, { details: { key } });
      settings[kind]![target.setting] = value;
      return (result.data as Record<string, unknown>)[target.setting];
    });
    const origins = originsOf(next);
    for (const [i, { target, key, value }] of live.entries()) {
      await this.applyNow(target, key, parsed[i], true);
      setOrigin(this.d.config, key, origins[key] ?? null);
      this.d.events.emit('config.changed', { key, value, worker: this.d.worker });
    }
    this.setState({ error: null, needsRestart });
    return { applied: live.map((c) => c.key), needsRestart };
  }

  private setState(next: FileState): void {
    const same = next.error === this.state.error && next.needsRestart.join('\n') === this.state.needsRestart.join('\n');
    this.state = next;
    if (!same) this.d.events.emit('config.file', { error: next.error, needs_restart: next.needsRestart });
  }

  set(key: string, value: TomlScalar): Promise<{ value: ConfigValue; file: string }> {
    const run = this.queue.then(() => this.apply(key, value));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Another worker's change, from the cluster event feed: applied here the same way, then said
   * again as this worker's `config.changed` (`adopted`), so pages on this worker read the value
   * after it applied; adopted events are never adopted again. What cannot apply here is logged.
   */
  adopt(event: Pick<StoredEvent, 'type' | 'data'>): void {
    if (event.type !== 'config.changed') return;
    const { key, value, worker, adopted } = event.data as Partial<ProductEvents['config.changed']>;
    if (typeof key !== 'string' || typeof worker !== 'string' || worker === this.d.worker || adopted || !isScalar(value)) return;
    const run = this.queue.then(() => this.adoptNow(key, value, worker));
    this.queue = run.catch((err: unknown) => this.d.log.warn({ err, key, from: worker }, 'a setting another worker changed could not be applied here'));
  }

  private async adoptNow(key: string, value: TomlScalar, from: string): Promise<void> {
    const target = this.target(key);
    if (!target) return void this.d.log.warn({ key, from }, 'another worker changed a setting this worker does not take live; it keeps its own');
    const locked = this.lockedBy(key);
    if (locked) return void this.d.log.info({ key, from }, `another worker changed a setting this worker's ${locked} sets; it keeps its own`);
    const parsed = this.checked(target, key, value);
    const table = `worlds.${target.module.kind}`;
    let held: unknown;
    try {
      held = readTomlKey(this.file, table, target.setting);
    } catch {
      held = undefined;
    }
    // A shared workspace already holds it (the other worker wrote it): writing again could undo an edit made since.
    if (held !== value) {
      try {
        writeTomlKey(this.file, table, target.setting, value);
      } catch (err) {
        this.d.log.warn({ err, key, from }, 'a setting another worker changed is applied here but could not be written to subconscious.toml');
      }
    }
    await this.applyNow(target, key, parsed, false);
    this.d.events.emit('config.changed', { key, value, worker: this.d.worker, adopted: true });
  }

  private async apply(key: string, value: TomlScalar): Promise<{ value: ConfigValue; file: string }> {
    const target = this.target(key);
    if (!target) {
      const known = effectiveConfig(this.d.config, null).values.some((v) => v.key === key);
      if (!known) throw new SubconsciousError('invalid_params', `key: there is no setting named "${key}"`, { details: { key } });
      throw new SubconsciousError('forbidden', `${key} cannot be changed while the daemon runs.`, {
        hint: 'Edit it in subconscious.toml and restart the daemon.',
        details: { key },
      });
    }
    const locked = this.lockedBy(key);
    if (locked) {
      throw new SubconsciousError('forbidden', `${key} is set by the ${locked}, which wins over subconscious.toml: it cannot be changed here.`, {
        hint: `Change it where the daemon is started (the ${locked}) and restart.`,
        details: { key },
      });
    }
    const parsed = this.checked(target, key, value);
    writeTomlKey(this.file, `worlds.${target.module.kind}`, target.setting, value);
    await this.applyNow(target, key, parsed, true);
    this.d.events.emit('config.changed', { key, value, worker: this.d.worker });
    const shown = this.effective(this.file).values.find((v) => v.key === key)!;
    return { value: shown, file: this.file };
  }

  /** The value as the module's section parses it, or the typed refusal (nothing changed). */
  private checked(target: Target, key: string, value: TomlScalar): unknown {
    const { module, setting } = target;
    if (setting === 'enabled') {
      if (typeof value === 'boolean') return value;
      throw new SubconsciousError('invalid_params', `${key}: must be true or false (got ${JSON.stringify(value)}); nothing was changed.`, {
        details: { key, reason: 'must be true or false' },
      });
    }
    const raw = { ...this.d.config.worlds[module.kind]!.settings, [setting]: value };
    const parsed = module.configSchema.safeParse(raw);
    if (!parsed.success) {
      const reason = parsed.error.issues[0]?.message ?? 'not a valid value';
      throw new SubconsciousError('invalid_params', `${key}: ${reason} (got ${JSON.stringify(value)}); nothing was changed.`, {
        details: { key, reason },
      });
    }
    return (parsed.data as Record<string, unknown>)[setting];
  }

  /**
   * Put a checked value in effect here. The in-memory part is synchronous; `own`: this worker took
   * the change (it also switches the world's stored switch on, which every worker shares).
   */
  private async applyNow(target: Target, key: string, parsed: unknown, own: boolean): Promise<void> {
    const { module, instance, setting } = target;
    const kind = module.kind;
    const section = this.d.config.worlds[kind]!;
    setOrigin(this.d.config, key, 'file');
    if (setting === 'enabled') {
      section.enabled = parsed === true;
      await this.d.registry.setDisabledBy(kind, section.enabled ? null : fileOffReason(kind));
      if (section.enabled && own) await this.d.registry.setEnabled(kind, true);
    } else {
      instance.reconfigure({ ...section.settings, [setting]: parsed });
      section.settings = { ...section.settings, [setting]: parsed };
      if (setting === 'interval_minutes') await this.d.registry.reschedule(kind);
    }
    this.d.events.emit('status.changed', { world: kind });
  }

  private target(key: string): Target | null {
    const m = WORLD_KEY.exec(key);
    if (!m) return null;
    const [, kind, setting] = m as unknown as [string, string, string];
    const module = this.d.modules.find((x) => x.kind === kind);
    const instance = this.d.instances.get(kind);
    if (!module || !instance || !this.d.config.worlds[kind]) return null;
    const live = setting === 'enabled' ? instance.world !== undefined : module.live.includes(setting);
    return live ? { module, instance, setting } : null;
  }

  /** What set the key over the file (the environment, the command line), or null. */
  private lockedBy(key: string): string | null {
    const origin = originsOf(this.d.config)[key];
    return origin === 'environment' ? 'environment' : origin === 'command line' ? 'command line' : null;
  }
}

/** Every value of a resolved configuration by dotted key, as JSON (arrays and secrets included, so any change shows). */
function leaves(config: Config): Map<string, string> {
  const { worlds, warnings: _warnings, ...base } = config;
  const out = new Map<string, string>();
  const walk = (prefix: string, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0) {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) walk(`${prefix}.${k}`, v);
    } else if (value !== undefined) out.set(prefix, JSON.stringify(value));
  };
  for (const [k, v] of Object.entries(base)) walk(k, v);
  for (const [kind, section] of Object.entries(worlds)) {
    out.set(`worlds.${kind}.enabled`, JSON.stringify(section.enabled));
    for (const [k, v] of Object.entries(section.settings)) walk(`worlds.${kind}.${k}`, v);
  }
  return out;
}

/** The value at a dotted key of a resolved configuration (a world's keys are in its section's settings). */
function valueAt(config: Config, key: string): unknown {
  const m = WORLD_KEY.exec(key);
  if (m) {
    const section = config.worlds[m[1]!];
    return m[2] === 'enabled' ? section?.enabled : section?.settings[m[2]!];
  }
  let node: unknown = config;
  for (const part of key.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

const isScalar = (v: unknown): v is TomlScalar => typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string';
