/**
 * `npm run bench:orchestration`: what the closed-loop harness costs on SQLite, offline (no model):
 *
 *   - one cycle end to end (queue, 7 graph nodes, commit) with checkpoints in memory, and with the
 *     durable checkpointer on the harness's own tables (one write per node: what makes a killed
 *     cycle resume), and the ratio;
 *   - retention: deleting 15,000 of 20,000 finished cycles with their world diff and history;
 *   - a quiet steering observe (nothing new to review): the whole cost of its idle tick, 0 calls.
 *
 * Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { productModules } from '../src/app/modules.js';
import { silentLogger, systemClock, uuid } from '../src/core/index.js';
import { MemoryCheckpointer, type Checkpointer } from '../src/graph/index.js';
import { HarnessStore, createHarness, harnessCheckpointer, orchestrationConfigSchema, type OrchestrationTables } from '../src/orchestration/index.js';
import { openStore, tablesView, type Store } from '../src/store/index.js';
import { createSteeringWorld, steeringConfigSchema, type SteeringTables } from '../src/worlds/steering/index.js';
import type { TickContext } from '../src/engine/index.js';

const migrations = productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : []));

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-orch-'));
  const store = await openStore({ workspace, migrations });
  try {
    return await fn(store);
  } finally {
    await store.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function cycles(n: number, durable: boolean): Promise<number> {
  return withStore(async (store) => {
    const db = tablesView<OrchestrationTables>(store.db);
    const checkpointer: Checkpointer = durable ? harnessCheckpointer(db, systemClock) : new MemoryCheckpointer(systemClock);
    const harness = createHarness({
      db,
      clock: systemClock,
      ids: uuid,
      log: silentLogger,
      emit: () => undefined,
      settings: orchestrationConfigSchema.parse({}),
      checkpointer,
    });
    for (let i = 0; i < 10; i++) await harness.send('bench', `Warm-up request ${i} about the Acme invoices.`, { wait: true });
    const started = performance.now();
    for (let i = 0; i < n; i++) await harness.send('bench', `Request ${i}: reconcile the Acme invoices for week ${i % 52}.`, { wait: true });
    const ms = (performance.now() - started) / n;
    await harness.close();
    return ms;
  });
}

async function retention(total: number, keep: number): Promise<{ ms: number; deleted: number }> {
  return withStore(async (store) => {
    const db = tablesView<OrchestrationTables>(store.db);
    const now = Date.now();
    for (let start = 1; start <= total; start += 500) {
      const seqs = Array.from({ length: Math.min(500, total - start + 1) }, (_, i) => start + i);
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('orchestration_cycles')
          .values(
            seqs.map((seq) => ({
              id: `c${seq}`,
              seq,
              channel: 'bench',
              text: `request ${seq}`,
              status: 'done',
              mode: 'offline',
              owner: null,
              cron_due: 0,
              path: '[]',
              gate: null,
              evictions: '[]',
              escalation: null,
              response: 'ok',
              directive_id: null,
              directive_text: null,
              steering: null,
              context_utilization: 0.1,
              event_log: '[]',
              error: null,
              created_at: now,
              started_at: now,
              finished_at: now,
            })),
          )
          .execute();
        await trx
          .insertInto('orchestration_world_diff')
          .values(
            seqs.map((seq) => ({
              cycle_id: `c${seq}`,
              seq,
              idx: 0,
              signature: 'x',
              entity: 'acme',
              mutation: 'acme: handled',
              delta: 0.2,
              critical: 0,
              at: now,
            })),
          )
          .execute();
        await trx
          .insertInto('orchestration_history')
          .values(
            seqs.map((seq) => ({
              cycle_id: `c${seq}`,
              seq,
              input_tokens: 200,
              budget_tokens: 10,
              summary: 'acme handled',
              summary_tokens: 3,
              attempts: 0,
              truncated: 0,
              forwarded: 0,
              created_at: now,
            })),
          )
          .execute();
      });
    }
    const started = performance.now();
    const r = await new HarnessStore(db).prune({ before: 0, keep });
    return { ms: performance.now() - started, deleted: r.cycles + r.diffs + r.history };
  });
}

async function quietObserve(n: number): Promise<number> {
  return withStore(async (store) => {
    const db = tablesView<OrchestrationTables>(store.db);
    const harness = createHarness({
      db,
      clock: systemClock,
      ids: uuid,
      log: silentLogger,
      emit: () => undefined,
      settings: orchestrationConfigSchema.parse({}),
    });
    for (let i = 0; i < 20; i++) await harness.send('bench', `Request ${i} about Acme.`, { wait: true });
    const world = createSteeringWorld({
      db: tablesView<SteeringTables>(store.db),
      harness: harness.store,
      settings: steeringConfigSchema.parse({}),
      emit: () => undefined,
    });
    // Everything reviewed: move the cursor past the history, as a committed review does.
    await world.directives.commitReview({ tickId: 't', newId: 'd', fromSeq: 1, toSeq: 20, rows: 20, cycle: 20, directive: null, at: Date.now() });
    const ctx = {} as TickContext; // observe reads nothing from the tick context
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const o = await world.observe(ctx);
      if (!o.quiet) throw new Error('expected a quiet observe');
    }
    const ms = (performance.now() - started) / n;
    await harness.close();
    return ms;
  });
}

const N = Number(process.env.BENCH_CYCLES ?? 200);
const inMemory = await cycles(N, false);
const durable = await cycles(N, true);
console.log(`offline cycle, SQLite, ${N} cycles each:`);
console.log(`  checkpoints in memory        ${inMemory.toFixed(2)} ms/cycle`);
console.log(
  `  checkpoints in own tables    ${durable.toFixed(2)} ms/cycle  (×${(durable / inMemory).toFixed(2)}: a thread row and 7 node checkpoints per cycle)`,
);
const r = await retention(20_000, 5_000);
console.log(`retention: 15,000 of 20,000 cycles with their diff and history (${r.deleted} rows) deleted in ${r.ms.toFixed(0)} ms`);
console.log(`steering world, nothing new to review: observe ${(await quietObserve(500)).toFixed(3)} ms (0 model calls)`);
