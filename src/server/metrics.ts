/**
 * Prometheus metrics people alert on (issue 18 item 9):
 * - ticks and failures counted, and tick duration as a histogram, from engine events;
 * - model-call latency as a histogram, from this process's ledger as it writes each call;
 * - model calls and tokens read through the ledger at scrape time (so they include calls made by
 *   other processes on the same store);
 * - jobs by queue and state from the coordinator (the cluster's, on Postgres);
 * - bots by host and status, from the hosts that provide `BotStatusKey` (read at scrape time);
 * - Node process metrics (CPU, memory, event-loop lag, GC) under the `subconscious_` prefix.
 * The server reads no table itself: the ledger's aggregation and the coordinator answer.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Subscribable } from '../core/events.js';
import type { AggregateQuery, CallRecord, LedgerGroup } from '../llm/ledger.js';
import type { EngineEvents } from '../protocol/engine.js';
import type { QueueSize } from '../coordination/index.js';
import type { BotStatusSource } from '../core/metric-sources.js';

/** What metrics need of the ledger. */
export interface LedgerFigures {
  aggregate(query: AggregateQuery): Promise<LedgerGroup[]>;
  /** Absent: no latency histogram (a ledger seen only through its aggregation). */
  onCall?(listener: (call: CallRecord) => void): () => void;
}

export interface MetricsSources {
  ledger: LedgerFigures;
  events: Subscribable;
  /** Jobs by queue and state; absent: no job gauge. */
  jobs?: { sizes(): Promise<QueueSize[]> } | undefined;
  /** Bots by host and status (the `subconscious_bots` gauge); absent: no bot gauge. */
  bots?: BotStatusSource | undefined;
  /** Node process metrics (default true; tests that build several registries turn it off). */
  processMetrics?: boolean | undefined;
}

/** Seconds: ticks are milliseconds when quiet and tens of seconds when a model answers. */
const TICK_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds: a small local model answers in 0.2–30 s; an agent step can take minutes. */
const CALL_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];
const JOB_STATES = ['queued', 'active', 'failed', 'dead'] as const;

export function createMetrics(sources: MetricsSources): { registry: Registry; dispose: () => void };
/** @deprecated since 0.1: pass `{ ledger, events }`. */
export function createMetrics(ledger: LedgerFigures, events: Subscribable): { registry: Registry; dispose: () => void };
export function createMetrics(a: MetricsSources | LedgerFigures, b?: Subscribable): { registry: Registry; dispose: () => void } {
  const sources: MetricsSources = b ? { ledger: a as LedgerFigures, events: b } : (a as MetricsSources);
  const { ledger, events } = sources;
  const registry = new Registry();
  if (sources.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'subconscious_' });
  const ticks = new Counter({ name: 'subconscious_ticks_total', help: 'Ticks by world and outcome', labelNames: ['world', 'outcome'], registers: [registry] });
  const failures = new Counter({
    name: 'subconscious_tick_failures_total',
    help: 'Ticks that counted as failures (raised consecutive_failures) by world: failed ticks and provider-gate skips',
    labelNames: ['world'],
    registers: [registry],
  });
  const tickSeconds = new Histogram({
    name: 'subconscious_tick_duration_seconds',
    help: 'Tick duration by world and outcome (this process)',
    labelNames: ['world', 'outcome'],
    buckets: TICK_BUCKETS,
    registers: [registry],
  });
  const callSeconds = new Histogram({
    name: 'subconscious_model_call_duration_seconds',
    help: 'Model-call latency by world, role and outcome (calls this process made)',
    labelNames: ['world', 'role', 'outcome'],
    buckets: CALL_BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: 'subconscious_model_calls',
    help: 'Model calls in the ledger by world and outcome',
    labelNames: ['world', 'outcome'],
    registers: [registry],
    async collect() {
      const rows = await ledger.aggregate({ by: ['world', 'outcome'] });
      this.reset();
      for (const r of rows) this.set({ world: r.world!, outcome: r.outcome! }, r.calls);
    },
  });
  new Gauge({
    name: 'subconscious_model_tokens',
    help: 'Model tokens in the ledger by world and direction',
    labelNames: ['world', 'direction'],
    registers: [registry],
    async collect() {
      const rows = await ledger.aggregate({ by: ['world'] });
      this.reset();
      for (const r of rows) {
        this.set({ world: r.world!, direction: 'input' }, r.inputTokens);
        this.set({ world: r.world!, direction: 'output' }, r.outputTokens);
      }
    },
  });
  const jobs = sources.jobs;
  if (jobs) {
    scrapedGauge(registry, 'subconscious_jobs', 'Durable jobs by queue and state (queued, active, failed, dead: moved aside)', ['queue', 'state'], async () =>
      (await jobs.sizes()).flatMap((q) => JOB_STATES.map((state) => ({ labels: { queue: q.queue, state }, value: q[state] }))),
    );
  }
  const bots = sources.bots;
  if (bots) {
    scrapedGauge(
      registry,
      'subconscious_bots',
      'Bots by host (builtin, or an external runtime) and status (idle, queued, working)',
      ['host', 'status'],
      async () => (await bots.statusCounts()).map((c) => ({ labels: { host: c.host, status: c.status }, value: c.count })),
    );
  }
  const stopCalls = ledger.onCall?.((call) => callSeconds.observe({ world: call.world, role: call.role, outcome: call.outcome }, call.latencyMs / 1000));
  const stopTicks = events.subscribe((e) => {
    if (e.type !== 'tick.finished') return;
    const tick = e.data as EngineEvents['tick.finished'];
    ticks.inc({ world: tick.world, outcome: tick.outcome });
    tickSeconds.observe({ world: tick.world, outcome: tick.outcome }, tick.duration_ms / 1000);
    // The engine says whether the tick counted: a model-unreachable tick is `skipped` yet counts.
    if (tick.counts_as_failure) failures.inc({ world: tick.world });
  });
  return {
    registry,
    dispose: () => {
      stopTicks();
      stopCalls?.();
    },
  };
}

/** A gauge read at scrape time: its series are exactly what `read` answers then (older ones are dropped). */
function scrapedGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Promise<Array<{ labels: Record<L, string>; value: number }>>,
): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const series = await read();
      this.reset();
      for (const { labels, value } of series) this.set(labels, value);
    },
  });
}
