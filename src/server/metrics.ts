/**
 * Prometheus metrics: ticks and failures counted from engine events; model calls and tokens read
 * through the ledger at scrape time (so they include calls made by other processes on the same
 * store). The server reads no table: the ledger's own aggregation answers.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { Subscribable } from '../core/events.js';
import type { AggregateQuery, LedgerGroup } from '../llm/ledger.js';
import type { EngineEvents } from '../protocol/engine.js';

/** What metrics need of the ledger. */
export interface LedgerFigures {
  aggregate(query: AggregateQuery): Promise<LedgerGroup[]>;
}

export function createMetrics(ledger: LedgerFigures, events: Subscribable): { registry: Registry; dispose: () => void } {
  const registry = new Registry();
  const ticks = new Counter({ name: 'subconscious_ticks_total', help: 'Ticks by world and outcome', labelNames: ['world', 'outcome'], registers: [registry] });
  const failures = new Counter({
    name: 'subconscious_tick_failures_total',
    help: 'Ticks that counted as failures (raised consecutive_failures) by world: failed ticks and provider-gate skips',
    labelNames: ['world'],
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
  const dispose = events.subscribe((e) => {
    if (e.type !== 'tick.finished') return;
    const tick = e.data as EngineEvents['tick.finished'];
    ticks.inc({ world: tick.world, outcome: tick.outcome });
    // The engine says whether the tick counted: a model-unreachable tick is `skipped` yet counts.
    if (tick.counts_as_failure) failures.inc({ world: tick.world });
  });
  return { registry, dispose };
}
