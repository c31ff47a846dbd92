/**
 * `subconscious simulate`: what would this config cost over a day? The real modules run on the
 * real engine and scheduler, on a FakeClock moved through the period minute by minute, against a
 * scratch in-memory store seeded with what each module starts from (the person's database is only
 * read). The model is the in-process dry-run model, whose answers each module gives for its own
 * calls (the steady state: nothing needs doing); every call still goes through the real model
 * layer and ledger, whose figures are the answer.
 */
import path from 'node:path';
import { FakeClock, SubconsciousError, flush, silentLogger, uuid } from '../core/index.js';
import type { ErasedSession, TickOutcomeKind, WorldModule } from '../engine/index.js';
import { Ledger, dryRunModel, type DryRunRequest, type LedgerTables, type UsageTotals } from '../llm/index.js';
import { tablesView } from '../store/index.js';
import { createApp, type App } from './app.js';
import { loadConfig } from './config.js';
import { productModules } from './modules.js';
import { openScratchStore } from './scratch-store.js';

export const MAX_HOURS = 168;
const HOUR_MS = 3_600_000;
/** The scheduler wakes at least once a minute; stepping by that lets every tick start on time. */
const STEP_MS = 60_000;
/** Real time a tick may take before simulated time moves on anyway (it is waiting on the clock). */
const TICK_WATCHDOG_MS = 5_000;
const MCP_NOT_CHECKED = 'not checked in a simulation';
/** The dry-run model's answer to a call no module claims. */
const NOTHING_TO_REPORT = 'Nothing to report.';

const SHARED_ASSUMPTIONS = 'Tokens are estimated at 4 characters per token; MCP servers are not checked in a simulation.';

export interface SimulateOptions {
  workspace: string;
  hours: number;
  /** Default: the product's modules. */
  modules?: readonly WorldModule[] | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** Start of the simulated period (epoch ms; default now). */
  start?: number | undefined;
  /** Told after every simulated minute. */
  onProgress?: ((progress: SimulationProgress) => void) | undefined;
}

export interface SimulationProgress {
  now: number;
  start: number;
  end: number;
  ticks: number;
}

export interface WorldTicks {
  world: string;
  enabled: boolean;
  interval_minutes: number;
  ticks: number;
  /** Ticks whose observe found nothing: no model call. */
  quiet: number;
  /** Ticks that reflected (one evaluation call per batch). */
  evaluated: number;
  skipped: number;
  failed: number;
  superseded: number;
}

export interface UsageRow {
  world: string;
  purpose?: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  failed: number;
  /** Calls whose tokens are estimates. */
  estimated: number;
}

export interface SimulationResult {
  period: { start: string; end: string; hours: number };
  worlds: WorldTicks[];
  model_calls: number;
  tokens: { input: number; output: number; estimated: boolean };
  by_world: UsageRow[];
  by_purpose: UsageRow[];
  /** What was copied from the person's database (null: there is none yet), per module. */
  copied: { from: string | null; rows: Array<{ module: string; what: string; count: number }> };
  /** Each module's own figures (the tasks world: the largest situation report, task decisions). */
  modules: Record<string, Record<string, unknown>>;
  /** The same figures in the modules' own words, for people. */
  module_lines: string[];
  models: { local: string; agent: string };
  mcp_servers: { name: string; health: string }[];
  /** One line per distinct failure message, if any tick failed. */
  failures: string[];
  assumptions: string;
}

/** `--hours`: a number of hours from 1 to 168. */
export function parseHours(value: string): number {
  return checkHours(value.trim() === '' ? Number.NaN : Number(value), value);
}

function checkHours(hours: number, given: unknown): number {
  if (!(hours >= 1 && hours <= MAX_HOURS)) {
    throw new SubconsciousError('invalid_params', `--hours must be a number of hours from 1 to ${MAX_HOURS} (got ${JSON.stringify(given)}).`, {
      hint: 'For example --hours 24 (a day) or --hours 168 (a week).',
      details: { field: 'hours' },
    });
  }
  return hours;
}

export async function simulate(opts: SimulateOptions): Promise<SimulationResult> {
  checkHours(opts.hours, opts.hours);
  const workspace = path.resolve(opts.workspace);
  const env = opts.env ?? process.env;
  const modules = opts.modules ?? productModules;
  const config = loadConfig({ workspace, modules, env }); // a bad config stops here, before anything is opened
  const scratch = await openScratchStore(workspace, config, modules);
  const clock = new FakeClock(opts.start ?? Date.now());
  let app: App | undefined;
  // Sessions answer through the app's own RPC once it exists (their figures are read at the end).
  const transport = (method: string, params: Record<string, unknown>) => app!.rpc.call(method, params);
  const sessions: Array<{ kind: string; session: ErasedSession }> = [];
  for (const m of modules) {
    const session = m.simulate?.session?.(config.worlds[m.kind]?.settings ?? {}, transport);
    if (session) sessions.push({ kind: m.kind, session });
  }
  const reply = (request: DryRunRequest): string => {
    for (const { session } of sessions) {
      const answer = session.reply(request);
      if (answer !== undefined) return answer;
    }
    return NOTHING_TO_REPORT;
  };
  const skills = {
    health: () =>
      config.mcp.servers.map((s) => ({
        name: s.name,
        status: 'disconnected' as const,
        tools: [],
        last_checked_at: null,
        restarts: 0,
        pid: null,
        error: MCP_NOT_CHECKED,
      })),
  };
  try {
    app = await createApp({
      workspace,
      modules,
      env,
      clock,
      log: silentLogger,
      store: scratch.store,
      inProcessModel: (_role, endpoint) => dryRunModel({ modelId: endpoint.model, reply }),
      skills,
    });
  } catch (err) {
    await scratch.store.close().catch(() => undefined);
    throw err;
  }
  try {
    const start = clock.now();
    const end = start + opts.hours * HOUR_MS;
    const ticks = countTicks(app);
    await app.start();
    await settle(app);
    // Ticks that start in [start, end): the last step stops just short of `end`.
    while (clock.now() < end - 1) {
      await clock.advance(Math.min(STEP_MS, end - 1 - clock.now()));
      await settle(app);
      opts.onProgress?.({ now: clock.now(), start, end, ticks: ticks.total() });
    }
    await app.registry.stop();
    ticks.stop();
    const usage = await new Ledger(tablesView<LedgerTables>(app.store.db), uuid).summary({ since: start, until: end });
    const running = app;
    const worlds = await Promise.all(
      running.registry
        .list()
        .map(async (instance) => ({ ...ticks.of(instance.name), enabled: await instance.isEnabled(), interval_minutes: instance.world.intervalMinutes() })),
    );
    const figures: Record<string, Record<string, unknown>> = {};
    const lines: string[] = [];
    for (const { kind, session } of sessions) {
      figures[kind] = await session.finish();
      session.print(figures[kind], (line) => lines.push(line));
    }
    return {
      period: { start: new Date(start).toISOString(), end: new Date(end).toISOString(), hours: opts.hours },
      worlds,
      model_calls: usage.totals.calls,
      tokens: { input: usage.totals.inputTokens, output: usage.totals.outputTokens, estimated: usage.totals.estimated > 0 },
      by_world: usage.byWorld.map((g) => usageRow(g, g.world)),
      by_purpose: usage.byPurpose.map((g) => usageRow(g, g.world, g.purpose)),
      copied: { from: scratch.imported.from, rows: scratch.imported.copied },
      modules: figures,
      module_lines: lines,
      models: { local: config.models.local.model, agent: config.models.agent.model },
      mcp_servers: config.mcp.servers.map((s) => ({ name: s.name, health: MCP_NOT_CHECKED })),
      failures: ticks.failures(),
      assumptions: [...sessions.map(({ session }) => session.assumptions), SHARED_ASSUMPTIONS].join(' '),
    };
  } finally {
    await app.close();
  }
}

function usageRow(g: UsageTotals, world: string, purpose?: string): UsageRow {
  return {
    world,
    ...(purpose === undefined ? {} : { purpose }),
    calls: g.calls,
    input_tokens: g.inputTokens,
    output_tokens: g.outputTokens,
    failed: g.failed,
    estimated: g.estimated,
  };
}

/** Tick outcomes per world, from the engine's own `tick.finished` events. */
function countTicks(app: App) {
  const blank = (world: string): Omit<WorldTicks, 'enabled' | 'interval_minutes'> => ({
    world,
    ticks: 0,
    quiet: 0,
    evaluated: 0,
    skipped: 0,
    failed: 0,
    superseded: 0,
  });
  const perWorld = new Map(app.registry.names().map((name) => [name, blank(name)]));
  const failures = new Set<string>();
  let total = 0;
  const field: Record<TickOutcomeKind, 'quiet' | 'evaluated' | 'skipped' | 'failed' | 'superseded'> = {
    quiet: 'quiet',
    committed: 'evaluated',
    skipped: 'skipped',
    failed: 'failed',
    superseded: 'superseded',
  };
  const stop = app.events.subscribe((event) => {
    if (event.type !== 'tick.finished') return;
    const world = event.data.world;
    const kind = event.data.outcome;
    const counts = perWorld.get(world) ?? blank(world);
    perWorld.set(world, counts);
    counts.ticks++;
    counts[field[kind]]++;
    total++;
    if (kind === 'failed') failures.add(`${world}: ${String(event.data.message)}`);
  });
  return {
    total: () => total,
    of: (world: string) => perWorld.get(world) ?? blank(world),
    failures: () => [...failures].slice(0, 10),
    stop,
  };
}

/**
 * Let every running tick finish before simulated time moves on, so ticks take no simulated time
 * and start exactly on their cadence. A tick still running after a few real seconds is waiting
 * on the clock itself (a retry wait), so time is let go on.
 */
async function settle(app: App): Promise<void> {
  await flush();
  const since = performance.now();
  while (app.registry.list().some((i) => i.running) && performance.now() - since < TICK_WATCHDOG_MS) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await flush(); // the scheduler records the next due time and goes back to sleep
}

/** One self-rewriting stderr line, refreshed once per simulated hour. */
export function progressLine(write: (text: string) => void): { update: (p: SimulationProgress) => void; clear: () => void } {
  let shown = -1;
  return {
    update(p) {
      const hour = Math.floor((p.now - p.start) / HOUR_MS);
      if (hour === shown) return;
      shown = hour;
      write(`\rsimulating: ${hour} of ${Math.round((p.end - p.start) / HOUR_MS)} h, ${p.ticks} ticks\x1b[K`);
    },
    clear: () => (shown >= 0 ? write('\r\x1b[K') : undefined),
  };
}

/** The result for people: a few lines, figures first, the assumptions last. */
export function printSimulation(result: SimulationResult, print: (line: string) => void): void {
  const n = (x: number) => x.toLocaleString('en-US');
  print(`Simulated ${n(result.period.hours)} h (${result.period.start} → ${result.period.end}) — a dry run: no model was contacted.`);
  for (const w of result.worlds) {
    const others = [
      w.skipped ? `${n(w.skipped)} skipped` : '',
      w.failed ? `${n(w.failed)} failed` : '',
      w.superseded ? `${n(w.superseded)} superseded` : '',
    ].filter(Boolean);
    print(
      `  ${w.world}: ${n(w.ticks)} ticks every ${w.interval_minutes} min${w.enabled ? '' : ' (disabled)'} — ${n(w.evaluated)} evaluated, ${n(w.quiet)} quiet${others.length ? `, ${others.join(', ')}` : ''}`,
    );
  }
  const est = result.tokens.estimated ? ' (estimated, 4 chars/token)' : '';
  print(`  model calls: ${n(result.model_calls)} (local model ${result.models.local})`);
  print(`  tokens: ${n(result.tokens.input)} in, ${n(result.tokens.output)} out${est}`);
  for (const p of result.by_purpose) print(`    ${p.world}/${p.purpose}: ${n(p.calls)} calls, ${n(p.input_tokens)} in, ${n(p.output_tokens)} out`);
  for (const line of result.module_lines) print(line);
  const copied = result.copied.rows.map((r) => `${n(r.count)} ${r.what}`).join(', ');
  print(
    `  copied: ${result.copied.from ? `${copied || 'nothing'} from ${result.copied.from}` : 'nothing (no database yet: system defaults and HEARTBEAT.md only)'}`,
  );
  for (const s of result.mcp_servers) print(`  MCP server ${s.name}: ${s.health}`);
  for (const f of result.failures) print(`  FAILED ${f}`);
  print(result.assumptions);
}
