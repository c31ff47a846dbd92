/**
 * Prometheus metrics: ticks and failures counted from engine events; model calls and tokens read
 * from the ledger at scrape time (so they include calls made by other processes on the same store).
 */
import type { Kysely } from 'kysely';
import { Counter, Gauge, Registry } from 'prom-client';
import type { EventBus } from '../core/events.js';
import type { Database } from '../store/schema.js';

export function createMetrics(db: Kysely<Database>, events: EventBus): { registry: Registry; dispose: () => void } {
  const registry = new Registry();
  const ticks = new Counter({ name: 'subconscious_ticks_total', help: 'Ticks by world and outcome', labelNames: ['world', 'outcome'], registers: [registry] });
  const failures = new Counter({
    name: 'subconscious_tick_failures_total',
    help: 'Ticks that counted as failures (raised consecutive_failures) by world: failed ticks and provider-gate skips',
    labelNames: ['world'],
    registers: [registry],
  });
  const calls = new Gauge({
    name: 'subconscious_model_calls',
    help: 'Model calls in the ledger by world and outcome',
    labelNames: ['world', 'outcome'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('model_calls')
        .select(['world', 'outcome', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy(['world', 'outcome'])
        .execute();
      this.reset();
      for (const r of rows) this.set({ world: r.world, outcome: r.outcome }, Number(r.n));
    },
  });
  const tokens = new Gauge({
    name: 'subconscious_model_tokens',
    help: 'Model tokens in the ledger by world and direction',
    labelNames: ['world', 'direction'],
    registers: [registry],
    async collect() {
      const rows = await db
        .selectFrom('model_calls')
        .select(['world', (eb) => eb.fn.sum<number>('input_tokens').as('input'), (eb) => eb.fn.sum<number>('output_tokens').as('output')])
        .groupBy('world')
        .execute();
      this.reset();
      for (const r of rows) {
        this.set({ world: r.world, direction: 'input' }, Number(r.input ?? 0));
        this.set({ world: r.world, direction: 'output' }, Number(r.output ?? 0));
      }
    },
  });
  void calls;
  void tokens;
  const dispose = events.subscribe((e) => {
    if (e.type !== 'tick.finished') return;
    const world = String(e.data.world ?? 'unknown');
    const outcome = String(e.data.outcome ?? 'unknown');
    ticks.inc({ world, outcome });
    // The engine says whether the tick counted: a model-unreachable tick is `skipped` yet counts.
    if (e.data.counts_as_failure === true) failures.inc({ world });
  });
  return { registry, dispose };
}
