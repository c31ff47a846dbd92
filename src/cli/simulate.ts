/**
 * `subconscious simulate`: what would this config cost over a day? The product's real worlds run
 * on the real engine and scheduler, on a FakeClock moved through the period minute by minute,
 * against a scratch in-memory store seeded with the user's tasks (their database is only read).
 * The model is the in-process dry-run model: every evaluation decides `noop` for every task (the
 * steady-state cost of watching when nothing needs doing), and every call still goes through the
 * real model layer and ledger, whose grouped figures are the answer.
 */
import path from 'node:path';
import { createApp, type App } from '../app/app.js';
import { loadConfig } from '../app/config.js';
import { openScratchStore } from '../app/scratch-store.js';
import { FakeClock, SubconsciousError, flush, silentLogger, uuid, type BusEvent } from '../core/index.js';
import type { TickOutcomeKind } from '../engine/index.js';
import { Ledger, dryRunModel, type DryRunRequest, type UsageTotals } from '../llm/index.js';
import { noopDecisionsReply, readEvaluationPrompt, type SkillsHealth, type Task } from '../worlds/tasks/index.js';

export const MAX_HOURS = 168;
const HOUR_MS = 3_600_000;
/** The scheduler wakes at least once a minute; stepping by that lets every tick start on time. */
const STEP_MS = 60_000;
/** Real time a tick may take before simulated time moves on anyway (it is waiting on the clock). */
const TICK_WATCHDOG_MS = 5_000;
const MCP_NOT_CHECKED = 'not checked in a simulation';
/** The answer to any call that is not an evaluation (none is expected: every task decides noop). */
const NOTHING_TO_REPORT = 'Nothing to report.';

export const ASSUMPTIONS =
  'Assumes the steady state: every due task decides noop on every tick (nothing needs doing, so nothing is executed and no agent runs); ' +
  'tokens are estimated at 4 characters per token; HEARTBEAT.md, workspace files and tasks stay as they are now; MCP servers are not checked in a simulation.';

export interface SimulateOptions {
  workspace: string;
  hours: number;
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
  /** The largest situation report an evaluation was sent, against the configured budget. */
  largest_situation_report: { tokens: number; budget: number } | null;
  /** Task decisions asked for over the period, and the most in one call. */
  task_decisions: { total: number; max_per_call: number };
  tasks: { copied_from: string | null; copied: number; enabled_at_end: number };
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
  const config = loadConfig({ workspace, env }); // a bad config stops here, before anything is opened
  const scratch = await openScratchStore(workspace, config);
  const clock = new FakeClock(opts.start ?? Date.now());
  const evaluations = { largestReport: -1, decisions: 0, maxPerCall: 0 };
  const reply = (request: DryRunRequest): string => {
    const read = readEvaluationPrompt(request.prompt);
    if (!read) return NOTHING_TO_REPORT;
    evaluations.largestReport = Math.max(evaluations.largestReport, read.reportTokens);
    evaluations.decisions += read.taskIds.length;
    evaluations.maxPerCall = Math.max(evaluations.maxPerCall, read.taskIds.length);
    return noopDecisionsReply(read.taskIds);
  };
  const skills: SkillsHealth = { health: () => config.mcp.servers.map((s) => ({ name: s.name, status: 'not checked' })) };
  let app: App;
  try {
    app = await createApp({
      workspace,
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
    app.registry.start();
    await settle(app);
    // Ticks that start in [start, end): the last step stops just short of `end`.
    while (clock.now() < end - 1) {
      await clock.advance(Math.min(STEP_MS, end - 1 - clock.now()));
      await settle(app);
      opts.onProgress?.({ now: clock.now(), start, end, ticks: ticks.total() });
    }
    await app.registry.stop();
    ticks.stop();
    const usage = await new Ledger(app.store.db, uuid).summary({ since: start, until: end });
    const worlds = await Promise.all(
      app.registry
        .list()
        .map(async (instance) => ({ ...ticks.of(instance.name), enabled: await instance.isEnabled(), interval_minutes: instance.world.intervalMinutes() })),
    );
    const enabledTasks = ((await app.rpc.call('subconscious.tasks_list')) as Task[]).filter((t) => t.enabled && !t.completed);
    return {
      period: { start: new Date(start).toISOString(), end: new Date(end).toISOString(), hours: opts.hours },
      worlds,
      model_calls: usage.totals.calls,
      tokens: { input: usage.totals.inputTokens, output: usage.totals.outputTokens, estimated: usage.totals.estimated > 0 },
      by_world: usage.byWorld.map((g) => usageRow(g, g.world)),
      by_purpose: usage.byPurpose.map((g) => usageRow(g, g.world, g.purpose)),
      largest_situation_report: evaluations.largestReport < 0 ? null : { tokens: evaluations.largestReport, budget: config.heartbeat.context_budget_tokens },
      task_decisions: { total: evaluations.decisions, max_per_call: evaluations.maxPerCall },
      tasks: { copied_from: scratch.imported.from, copied: scratch.imported.tasks, enabled_at_end: enabledTasks.length },
      models: { local: config.models.local.model, agent: config.models.agent.model },
      mcp_servers: config.mcp.servers.map((s) => ({ name: s.name, health: MCP_NOT_CHECKED })),
      failures: ticks.failures(),
      assumptions: ASSUMPTIONS,
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
  const stop = app.events.subscribe((event: BusEvent) => {
    if (event.type !== 'tick.finished') return;
    const world = String(event.data.world);
    const kind = event.data.outcome as TickOutcomeKind;
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

/** 0.3%, 12%: one decimal only where it says something. */
function percent(share: number): string {
  const p = share * 100;
  return `${p > 0 && p < 10 ? p.toFixed(1) : Math.round(p)}%`;
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
  const report = result.largest_situation_report;
  if (report)
    print(`  largest situation report: ${n(report.tokens)} of ${n(report.budget)} tokens (${percent(report.tokens / report.budget)} of context_budget_tokens)`);
  else print('  largest situation report: none was built (no tick evaluated)');
  const enabled = result.tasks.enabled_at_end;
  print(
    `  task decisions: ${n(result.task_decisions.total)} (at most ${n(result.task_decisions.max_per_call)} per call); ${n(enabled)} enabled task${enabled === 1 ? '' : 's'}`,
  );
  print(
    `  tasks copied: ${result.tasks.copied_from ? `${n(result.tasks.copied)} from ${result.tasks.copied_from}` : 'none (no database yet: system defaults and HEARTBEAT.md only)'}`,
  );
  for (const s of result.mcp_servers) print(`  MCP server ${s.name}: ${s.health}`);
  for (const f of result.failures) print(`  FAILED ${f}`);
  print(result.assumptions);
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
