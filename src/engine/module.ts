/**
 * `WorldModule`: a world's one front door (DESIGN.md "A world is a module"). A module declares
 * its kind, description, config section (zod, defaults written once), tables and migrations, its
 * RPC contract and events, the services it needs and provides, its CLI subcommands, its
 * `simulate` hooks and its page tab; `create(ctx)` returns its world (absent for a host such as
 * the bots runtime), its RPC handlers and what it provides to other modules.
 *
 * `defineModule` keeps every type inside the definition — config section, table view, contract,
 * events — and hands the app an erased `WorldModule`, so the app builds everything from a plain
 * list with no per-world code and no casts.
 */
import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Clock, Emitter, IdGen, Logger, Provision, Publisher, ServiceKey, Services } from '../core/index.js';
import type { DryRunRequest, Llm } from '../llm/index.js';
import {
  createRpcClient,
  implement,
  type BoundMethod,
  type Contract,
  type EventsOf,
  type Handlers,
  type MethodsOf,
  type RpcCall,
  type Transport,
  type WireEvent,
} from '../protocol/index.js';
import { tablesView, type AnyTables, type DialectName, type MigrationSet } from '../store/index.js';
import type { World } from './types.js';

/** What every module is handed by the app. */
export interface ModuleContext<Config, Tables extends object, Events extends object> {
  /** The instance name (the module's kind). */
  name: string;
  workspace: string;
  /** Its `[worlds.<kind>]` section, validated, defaults filled in. */
  config: Config;
  /** Its own tables, and only those. */
  db: Kysely<Tables>;
  /**
   * The same tables for heavy reads that need not see a write still in flight: on a SQLite file
   * they run on the store's read thread, beside the main thread's own statements (absent: `db`).
   */
  reads?: Kysely<Tables>;
  /** The store's dialect, for what only one of them has (full-text search). */
  dialect: DialectName;
  llm: Llm;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  /** Its own events, and only those. */
  events: Emitter<Events & Record<string, Record<string, unknown>>>;
  /** Services other modules or the app provide (by key). */
  services: Services;
  /** The IANA zone days and schedules are counted in when nothing more specific says. */
  timezone: string;
  /** How long a tick may run before the engine stops it (`[engine] tick_timeout_minutes`). */
  tickTimeoutMs: number;
  /**
   * No other worker or face is alive on the store now (the coordinator's count): what only this
   * process writes may be kept in memory longer. Absent: never alone.
   */
  alone?: () => boolean;
  /** Run this module's world now in the background (its own "Run now" RPC). */
  trigger(): void;
  /** Why this module's world is off (the config or the page's switch, with how to switch it on), or null when it is on. */
  worldOff(): Promise<string | null>;
}

/** What `create` returns. */
export interface ModuleParts<M extends Contract['methods']> {
  /** The ticking world; absent for a host module (a runtime without a tick). */
  world?: World;
  handlers: Handlers<M>;
  /** Services for other modules (their keys must be listed in `provides`). */
  provides?: Provision[];
  /** Called once every module exists, before the scheduler starts (host timers, repairs). */
  start?(): void | Promise<void>;
  /** Release resources at shutdown (after the scheduler stopped). */
  close?(): Promise<void>;
}

/** What a module's CLI subcommands get: its methods, typed, through a daemon or in process. */
export interface CliContext<M extends Contract['methods'], E extends object> {
  call: RpcCall<M>;
  /** Events as they happen (from the daemon's `/events`, or this process); resolves to "stop". */
  subscribe(listener: (event: WireEvent<E & Record<string, Record<string, unknown>>>) => void): Promise<() => void>;
  /** A running daemon answers the calls (false: this process opened the store for the command's length). */
  daemonRunning(): Promise<boolean>;
  print(line: string): void;
}

export interface ModuleTables {
  names: readonly string[];
  migrations: MigrationSet;
  /**
   * Table and migration names that shipped before worlds were modules, kept as they are because
   * databases already hold them (exempt from the `<kind>_` / `<kind>/` naming rule).
   */
  shipped?: { tables?: readonly string[]; migrations?: readonly string[] };
}

/** A module's side of `subconscious simulate` (a dry-run day on a scratch copy of the store). */
export interface SimulateHooks<Config, Tables extends object, M extends Contract['methods']> {
  /** Copy what a simulation starts from out of the user's database (read-only) into the scratch store. */
  copy?(from: Kysely<Tables>, to: Kysely<Tables>): Promise<{ copied: number; what: string }>;
  /** One simulation: the dry-run model's answers to this module's calls, and its figures at the end. */
  session?(config: Config): SimulationSession<M>;
}

export interface SimulationSession<M extends Contract['methods']> {
  /** The dry-run model's reply to one of this module's calls; undefined when the call is not its own. */
  reply(request: DryRunRequest): string | undefined;
  /** This module's figures, merged into the simulation result. */
  finish(call: RpcCall<M>): Promise<Record<string, unknown>>;
  /** Lines for people (indented under the totals). */
  print(figures: Record<string, unknown>, print: (line: string) => void): void;
  /** What the figures assume. */
  assumptions: string;
}

export interface ModuleDefinition<S extends z.ZodObject, T extends object, C extends Contract> {
  kind: string;
  description: string;
  /** The `[worlds.<kind>]` section: every field has a default, so `{}` parses. */
  config: S;
  /** A top-level section read as this one, with a warning naming the new key (seed 1's `[heartbeat]`). */
  legacySection?: string;
  /** Its tables (names start with its kind, or were shipped before modules) and migrations (`<kind>/NNNN_name`). */
  tables?: ModuleTables;
  /**
   * Bare instance-state keys from before state was namespaced that belong to this world (seed 4
   * back-compat): moved under `<kind>:` at start, never clobbering a namespaced value.
   */
  legacyStateKeys?: readonly string[];
  contract: C;
  /** Services it cannot work without, and services it uses when they exist. */
  needs?: readonly ServiceKey<unknown>[];
  uses?: readonly ServiceKey<unknown>[];
  provides?: readonly ServiceKey<unknown>[];
  /** The page tab that shows its work (`web/src/tabs/<tab>/`). */
  tab?: string;
  /** Whether its world runs when nobody switched it (default true). */
  enabledByDefault?: boolean;
  /**
   * Keys of its section that may change while it runs (`subconscious.config_set`): the module
   * reads them from `ctx.config` at each use (never copied at `create`), and a change is written
   * over that object after the whole section validated with it.
   */
  live?: readonly string[];
  /**
   * A host (the bots runtime, the harness): no world, so no tick to switch off. Its section has
   * no `enabled` key, and `create` must not return a world (a world module must).
   */
  host?: boolean;
  cli?: { name: string; description: string; register(command: Command, cli: CliContext<MethodsOf<C>, EventsOf<C>>): void };
  simulate?: SimulateHooks<z.output<S>, T, MethodsOf<C>>;
  create(ctx: ModuleContext<z.output<S>, T, EventsOf<C>>): ModuleParts<MethodsOf<C>> | Promise<ModuleParts<MethodsOf<C>>>;
}

/** What the app hands every module, before its own parts (section, table view, emitter). */
export interface SharedContext {
  workspace: string;
  db: Kysely<AnyTables>;
  /** The store's read thread (a SQLite file), when it has one. */
  reads?: Kysely<AnyTables> | undefined;
  dialect: DialectName;
  llm: Llm;
  clock: Clock;
  ids: IdGen;
  log: Logger;
  events: Publisher;
  services: Services;
  timezone: string;
  tickTimeoutMs: number;
  alone?: (() => boolean) | undefined;
  trigger(kind: string): void;
  /** Why the named world is off, or null (on, or not a registered world). */
  worldOff(kind: string): Promise<string | null>;
}

export interface ModuleInstance {
  world?: World;
  /** Take new values of the module's live keys (the section as raw input, validated whole first; throws on a bad value, changing nothing). */
  reconfigure(rawConfig: unknown): void;
  methods: BoundMethod[];
  provides: Provision[];
  start?(): void | Promise<void>;
  close?(): Promise<void>;
}

export interface CliSetup {
  transport: Transport;
  subscribe(listener: (event: { type: string; at: number; data: Record<string, unknown> }) => void): Promise<() => void>;
  daemonRunning(): Promise<boolean>;
  print(line: string): void;
}

/** The erased front door: what the app, the CLI and `simulate` work with. */
export interface WorldModule {
  readonly kind: string;
  readonly description: string;
  readonly configSchema: z.ZodObject;
  readonly legacySection: string | undefined;
  readonly tables: ModuleTables | undefined;
  readonly legacyStateKeys: readonly string[];
  readonly contract: Contract;
  readonly needs: readonly ServiceKey<unknown>[];
  readonly uses: readonly ServiceKey<unknown>[];
  readonly provides: readonly ServiceKey<unknown>[];
  readonly tab: string | undefined;
  readonly enabledByDefault: boolean;
  /** Section keys that change without a restart (see `ModuleDefinition.live`). */
  readonly live: readonly string[];
  readonly host: boolean;
  readonly cli: { name: string; description: string; register(command: Command, setup: CliSetup): void } | undefined;
  readonly simulate:
    | {
        copy?(from: Kysely<AnyTables>, to: Kysely<AnyTables>): Promise<{ copied: number; what: string }>;
        session?(rawConfig: unknown, call: Transport): ErasedSession;
      }
    | undefined;
  instantiate(shared: SharedContext, rawConfig: unknown): Promise<ModuleInstance>;
}

export interface ErasedSession {
  reply(request: DryRunRequest): string | undefined;
  finish(): Promise<Record<string, unknown>>;
  print(figures: Record<string, unknown>, print: (line: string) => void): void;
  assumptions: string;
}

const KIND = /^[a-z][a-z0-9_-]*$/;

export function defineModule<S extends z.ZodObject, T extends object, C extends Contract>(def: ModuleDefinition<S, T, C>): WorldModule {
  if (!KIND.test(def.kind)) throw new Error(`invalid module kind "${def.kind}"`);
  const parse = (raw: unknown): z.output<S> => def.config.parse(raw ?? {});
  const sim = def.simulate;
  return {
    kind: def.kind,
    description: def.description,
    configSchema: def.config,
    legacySection: def.legacySection,
    tables: def.tables,
    legacyStateKeys: def.legacyStateKeys ?? [],
    contract: def.contract,
    needs: def.needs ?? [],
    uses: def.uses ?? [],
    provides: def.provides ?? [],
    tab: def.tab,
    enabledByDefault: def.enabledByDefault ?? true,
    live: def.live ?? [],
    host: def.host ?? false,
    cli: def.cli && {
      name: def.cli.name,
      description: def.cli.description,
      register: (command, setup) =>
        def.cli!.register(command, {
          call: createRpcClient<MethodsOf<C>>(setup.transport),
          subscribe: (listener) => setup.subscribe((event) => listener(event as WireEvent<EventsOf<C> & Record<string, Record<string, unknown>>>)),
          daemonRunning: () => setup.daemonRunning(),
          print: setup.print,
        }),
    },
    simulate: sim && {
      ...(sim.copy ? { copy: (from: Kysely<AnyTables>, to: Kysely<AnyTables>) => sim.copy!(tablesView<T>(from), tablesView<T>(to)) } : {}),
      ...(sim.session
        ? {
            session: (rawConfig: unknown, transport: Transport): ErasedSession => {
              const session = sim.session!(parse(rawConfig));
              return {
                reply: (request) => session.reply(request),
                finish: () => session.finish(createRpcClient<MethodsOf<C>>(transport)),
                print: (figures, print) => session.print(figures, print),
                assumptions: session.assumptions,
              };
            },
          }
        : {}),
    },
    async instantiate(shared, rawConfig) {
      // A module sends only the events its contract lists (checked here, at run time, too).
      const publish = (type: string, data: Record<string, unknown>) => {
        if (!def.contract.events.includes(type)) throw new Error(`module ${def.kind} emitted "${type}", which its contract does not list`);
        shared.events.publish(type, data);
      };
      const config = parse(rawConfig);
      const ctx: ModuleContext<z.output<S>, T, EventsOf<C>> = {
        name: def.kind,
        workspace: shared.workspace,
        config,
        db: tablesView<T>(shared.db),
        ...(shared.reads ? { reads: tablesView<T>(shared.reads) } : {}),
        dialect: shared.dialect,
        llm: shared.llm,
        clock: shared.clock,
        ids: shared.ids,
        log: shared.log.child({ module: def.kind }),
        events: { emit: (type: string, data: Record<string, unknown>) => publish(type, data) },
        services: shared.services,
        timezone: shared.timezone,
        tickTimeoutMs: shared.tickTimeoutMs,
        ...(shared.alone ? { alone: shared.alone } : {}),
        trigger: () => shared.trigger(def.kind),
        worldOff: () => shared.worldOff(def.kind),
      };
      const parts = await def.create(ctx);
      if (def.host && parts.world) throw new Error(`module ${def.kind} is a host but returned a world`);
      if (!def.host && !parts.world) throw new Error(`module ${def.kind} returned no world; a module without one is declared \`host: true\``);
      for (const p of parts.provides ?? []) {
        if (!(def.provides ?? []).some((k) => k.id === p.key.id)) throw new Error(`module ${def.kind} provides ${p.key.id} without declaring it`);
      }
      return {
        ...(parts.world ? { world: parts.world } : {}),
        reconfigure(raw) {
          const next = parse(raw) as Record<string, unknown>;
          for (const key of def.live ?? []) (config as Record<string, unknown>)[key] = next[key];
        },
        methods: implement(def.contract, parts.handlers),
        provides: parts.provides ?? [],
        ...(parts.start ? { start: parts.start } : {}),
        ...(parts.close ? { close: parts.close } : {}),
      };
    },
  };
}
