/**
 * Settings in effect: the `[worlds.heartbeat]` section, with what a person changed at run time
 * over it (store-wide, kept in `heartbeat_settings`), and per bot over that (`heartbeat_bots`).
 * A null per-bot value inherits; a key put back to null inherits again.
 */
import type { Kysely, Selectable } from 'kysely';
import { SubconsciousError, type Clock } from '../../core/index.js';
import {
  BOT_SETTING_KEYS,
  GLOBAL_ONLY_KEYS,
  type BotSettingKey,
  type HeartbeatMode,
  type HeartbeatSettings,
  type QuietHours,
  type SetHeartbeatSettingsParams,
} from '../../protocol/heartbeat.js';
import { KEYS_CACHE_MAX_AGE_MS } from '../../engine/index.js';
import { perDatabase, precompile } from '../../store/index.js';
import { heartbeatConfig, type HeartbeatConfig } from './config.js';
import type { HeartbeatBotsTable, HeartbeatTables } from './tables.js';

export type BotRow = Selectable<HeartbeatBotsTable>;
/** What a bot's settings in effect are made of: its own overrides and its switch. */
export type BotSettingsRow = Pick<BotRow, 'enabled' | BotSettingKey>;

/** One bot's settings in effect. */
export interface BotSettings {
  enabled: boolean;
  intervalMs: number;
  quietHours: QuietHours;
  timezone: string;
  model: string;
  followUpsEnabled: boolean;
  autoResumeOnRestart: boolean;
  maxPulsesPerDay: number;
  maxResumesPerDay: number;
  maxTaskAttempts: number;
  overridden: BotSettingKey[];
}

type Overridable = Omit<HeartbeatConfig, 'timezone'> & { timezone?: string | undefined };
const OVERRIDABLE = [...GLOBAL_ONLY_KEYS, ...BOT_SETTING_KEYS] as const;
type OverrideKey = (typeof OVERRIDABLE)[number];

const SETTINGS_ID = 'global';
/**
 * How long a read of the store-wide settings is trusted. A change made here (`setGlobal`, which
 * emits `heartbeat.settings_changed`) replaces the cached copy at once; this bound is only for a
 * change another process made on a shared database. A quiet tick reads no settings.
 */
export const SETTINGS_MAX_AGE_MS = 60_000;
/**
 * Read while no other worker or face was alive on the store, and still so: only this process
 * changes them. The bound is the engine's for what it keeps while alone (a worker that came and
 * went between two of the coordinator's counts).
 */
export const SETTINGS_MAX_AGE_ALONE_MS = KEYS_CACHE_MAX_AGE_MS;

/** Read once a minute by quiet ticks: compiled once per database. */
const overridesQuery = perDatabase((db: Kysely<HeartbeatTables>) =>
  precompile(db, 1, (id: string) => db.selectFrom('heartbeat_settings').select('overrides').where('id', '=', id)),
);

export class SettingsStore {
  /** The overrides as read, and what they resolve to (resolved once per read: a tick asks often). */
  private cached: { overrides: Partial<Overridable>; at: number; settings: HeartbeatSettings; alone: boolean } | null = null;

  constructor(
    private readonly d: {
      db: Kysely<HeartbeatTables>;
      clock: Clock;
      config: HeartbeatConfig;
      /** The zone when neither the section nor a bot names one. */
      timezone: string;
      /** No other worker or face is alive on the store (see `SETTINGS_MAX_AGE_ALONE_MS`). */
      alone?: () => boolean;
    },
  ) {}

  /** The store-wide settings in effect (a copy at most `maxAgeMs` old; 0 reads the store). */
  async global(maxAgeMs = SETTINGS_MAX_AGE_MS): Promise<HeartbeatSettings> {
    const now = this.d.clock.now();
    const alone = this.d.alone?.() ?? false;
    // The default bound grows while this process alone has written them since they were read
    // (seen not alone once, the copy is no longer trusted longer).
    if (!alone && this.cached) this.cached.alone = false;
    const bound = maxAgeMs === SETTINGS_MAX_AGE_MS && alone && this.cached?.alone ? SETTINGS_MAX_AGE_ALONE_MS : maxAgeMs;
    if (!this.cached || maxAgeMs <= 0 || now - this.cached.at >= bound || now < this.cached.at) {
      const row = (await overridesQuery(this.d.db)(SETTINGS_ID)).rows[0];
      this.remember(row ? readOverrides(row.overrides) : {}, now, alone);
    }
    return this.cached!.settings;
  }

  private remember(overrides: Partial<Overridable>, at: number, alone = false): void {
    this.cached = { overrides, at, settings: Object.freeze(this.resolve(overrides)), alone };
  }

  /** The mode in effect (cached for a tick's length: a quiet tick reads nothing else). */
  async mode(): Promise<HeartbeatMode> {
    return (await this.global(1000)).mode;
  }

  private resolve(overrides: Partial<Overridable>): HeartbeatSettings {
    const c = this.d.config;
    const merged = { ...c, ...overrides };
    return {
      mode: merged.mode,
      tick_seconds: merged.tick_seconds,
      interval_seconds: merged.interval_seconds,
      max_pulses_per_day: merged.max_pulses_per_day,
      max_resumes_per_day: merged.max_resumes_per_day,
      max_task_attempts: merged.max_task_attempts,
      resume_cooldown_seconds: merged.resume_cooldown_seconds,
      pulse_concurrency: merged.pulse_concurrency,
      resume_concurrency: merged.resume_concurrency,
      quiet_hours: { ...merged.quiet_hours },
      auto_resume_on_restart: merged.auto_resume_on_restart,
      follow_ups_enabled: merged.follow_ups_enabled,
      pulse_max_output_tokens: merged.pulse_max_output_tokens,
      pulse_timeout_seconds: merged.pulse_timeout_seconds,
      global_pulses_per_day: merged.global_pulses_per_day,
      global_resumes_per_day: merged.global_resumes_per_day,
      model: merged.model,
      timezone: merged.timezone ?? this.d.timezone,
      overridden: Object.keys(overrides).sort(),
    };
  }

  /** Change store-wide keys (null: back to the file's value). Returns the settings in effect. */
  async setGlobal(p: SetHeartbeatSettingsParams): Promise<HeartbeatSettings> {
    const row = await this.d.db.selectFrom('heartbeat_settings').select('overrides').where('id', '=', SETTINGS_ID).executeTakeFirst();
    const overrides: Record<string, unknown> = row ? readOverrides(row.overrides) : {};
    for (const key of OVERRIDABLE) {
      const value = (p as Record<string, unknown>)[key];
      if (value === undefined) continue;
      if (value === null) delete overrides[key];
      else overrides[key] = value;
    }
    const json = JSON.stringify(overrides);
    const now = this.d.clock.now();
    await this.d.db
      .insertInto('heartbeat_settings')
      .values({ id: SETTINGS_ID, overrides: json, updated_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ overrides: json, updated_at: now }))
      .execute();
    // What was just written is what is in effect: the cache follows the change (no re-read).
    this.remember(readOverrides(json), now, this.d.alone?.() ?? false);
    return this.global();
  }

  /** Forget the cached copy (a change seen elsewhere, e.g. another process's event). */
  invalidate(): void {
    this.cached = null;
  }

  /** A bot's settings in effect (its row may be missing: the defaults). */
  forBot(row: BotSettingsRow | undefined, g: HeartbeatSettings): BotSettings {
    const overridden = BOT_SETTING_KEYS.filter((k) => row !== undefined && row[k] !== null);
    return {
      enabled: row ? row.enabled === 1 : true,
      intervalMs: (row?.interval_seconds ?? g.interval_seconds) * 1000,
      quietHours: row?.quiet_hours ? readQuietHours(row.quiet_hours, g.quiet_hours) : g.quiet_hours,
      timezone: row?.timezone ?? g.timezone,
      model: row?.model ?? g.model,
      followUpsEnabled: row?.follow_ups_enabled === null || row?.follow_ups_enabled === undefined ? g.follow_ups_enabled : row.follow_ups_enabled === 1,
      autoResumeOnRestart:
        row?.auto_resume_on_restart === null || row?.auto_resume_on_restart === undefined ? g.auto_resume_on_restart : row.auto_resume_on_restart === 1,
      maxPulsesPerDay: row?.max_pulses_per_day ?? g.max_pulses_per_day,
      maxResumesPerDay: row?.max_resumes_per_day ?? g.max_resumes_per_day,
      maxTaskAttempts: row?.max_task_attempts ?? g.max_task_attempts,
      overridden,
    };
  }
}

/** Stored overrides, each checked again against the section's schema (a bad stored value is dropped, never trusted). */
function readOverrides(text: string): Partial<Overridable> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return {};
  }
  if (!raw || typeof raw !== 'object') return {};
  const out: Record<string, unknown> = {};
  const shape = heartbeatConfig.shape as Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!(OVERRIDABLE as readonly string[]).includes(key as OverrideKey)) continue;
    const parsed = shape[key]?.safeParse(value);
    if (parsed?.success) out[key] = parsed.data;
  }
  return out as Partial<Overridable>;
}

function readQuietHours(text: string, fallback: QuietHours): QuietHours {
  const parsed = heartbeatConfig.shape.quiet_hours.safeParse(safeJson(text));
  return parsed.success ? parsed.data : fallback;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `local` | `agent` | `local:<m>` | `agent:<m>` | `<m>` (on the local endpoint) → the call's role and model. */
export function pulseModel(spec: string): { role: 'local' | 'agent'; model: string | undefined } {
  const s = spec.trim();
  if (s === 'local' || s === 'agent') return { role: s, model: undefined };
  for (const role of ['local', 'agent'] as const) {
    if (s.startsWith(`${role}:`)) {
      const model = s.slice(role.length + 1).trim();
      if (!model) throw new SubconsciousError('invalid_params', `model: "${s}" names no model after "${role}:"`);
      return { role, model };
    }
  }
  return { role: 'local', model: s };
}
