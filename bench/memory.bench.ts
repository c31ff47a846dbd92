/**
 * `npx tsx bench/memory.bench.ts` (`npm run bench:memory`) — what memory costs. Figures are
 * printed, never asserted.
 *
 *  1. Recall latency at 10k and 100k documents on a SQLite file, through `MemoryStore.recall`
 *     (query sanitising, Kysely, row mapping), beside the same FTS5 statement run directly on a
 *     better-sqlite3 connection (the floor), as a ratio.
 *  2. Checkpoint + diff at 100k documents with 1% changed (modified, added, removed), and the
 *     O(1) "changed since?" check; beside a full scan of the documents table for scale.
 *  3. The conscious world's tokens per run (dry-run model, tokens estimated by the ledger)
 *     against the size of the changed memory, and the cost of its quiet tick.
 *
 * BENCH_DOCS (default 100000) scales the large corpus.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SQLite, type SqliteDatabase } from '../src/store/index.js';
import { EventBus, FakeClock, sequentialIds, silentLogger } from '../src/core/index.js';
import { Instance, type EngineTables } from '../src/engine/index.js';
import { StoreCheckpointer, type GraphTables } from '../src/graph/index.js';
import { createLlm, dryRunModel, type LedgerTables } from '../src/llm/index.js';
import { MemoryStore, fts5Match, memoryMigrations, parseQuery, renderDiff, sqliteRecallSql, type MemoryTables, type WriteOp } from '../src/memory/index.js';
import { applyMigrations, openStore, tablesView, type Store } from '../src/store/index.js';
import { DEFAULT_CONSCIOUS_SETTINGS, consciousMigrations, createConsciousWorld, type ConsciousTables } from '../src/worlds/conscious/index.js';

const LARGE = Number(process.env.BENCH_DOCS ?? 100_000);
const SMALL = Math.min(10_000, LARGE);
const QUERIES = 300;
const BATCH = 1_000;
const NAMESPACES = ['mail', 'notes', 'chat', 'calendar', 'crm'];

// ---- a deterministic corpus ---------------------------------------------------------------

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = rng(42);
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'su', 'ra', 'to', 'vi', 'den', 'mar', 'pol', 'sen', 'tur', 'gal', 'bre', 'fin', 'qua', 'zor'];
const VOCAB = Array.from({ length: 8_000 }, (_, i) => {
  let w = '';
  for (let n = i + 7; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
});
/** Zipf-ish: a few words are everywhere, most are rare (as in real text). */
const word = () => VOCAB[Math.floor(VOCAB.length * Math.pow(random(), 2.2))]!;
const words = (n: number) => Array.from({ length: n }, word).join(' ');

function doc(i: number, version = 0) {
  return { external_id: `doc-${i}`, title: `${words(5)} ${i}`, body: `${words(80)}${version ? ` revision ${version}` : ''}`, source_kind: 'email' };
}

async function fill(memory: MemoryStore, from: number, to: number): Promise<number> {
  const started = performance.now();
  for (let start = from; start < to; start += BATCH) {
    const byNs = new Map<string, WriteOp[]>();
    for (let i = start; i < Math.min(to, start + BATCH); i++) {
      const ns = NAMESPACES[i % NAMESPACES.length]!;
      const ops = byNs.get(ns) ?? [];
      ops.push({ op: 'put', doc: doc(i) });
      byNs.set(ns, ops);
    }
    for (const [ns, ops] of byNs) await memory.write(ns, ops, { label: ns, kind: 'bench' });
  }
  return (to - from) / ((performance.now() - started) / 1000);
}

// ---- measuring ----------------------------------------------------------------------------

const fmt = (n: number, d = 3) => n.toFixed(d);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

function queries(n: number): string[] {
  const r = rng(7);
  // Mid-frequency words: neither stop-word-like nor absent.
  const pick = () => VOCAB[200 + Math.floor(r() * 3_000)]!;
  return Array.from({ length: n }, (_, i) => (i % 3 === 0 ? pick() : i % 3 === 1 ? `${pick()} ${pick()}` : `${pick()} ${pick()} ${pick()}`));
}

async function timeRecall(memory: MemoryStore, raw: SqliteDatabase, label: string): Promise<void> {
  const qs = queries(QUERIES);
  const stmt = raw.prepare(sqliteRecallSql(false));
  const stmtNs = raw.prepare(sqliteRecallSql(true));
  for (const q of qs.slice(0, 30)) {
    await memory.recall({ query: q, limit: 10 });
    stmt.all(fts5Match(parseQuery(q)), 10);
  }
  const ours: number[] = [];
  const floor: number[] = [];
  const oursNs: number[] = [];
  const floorNs: number[] = [];
  let hits = 0;
  for (const q of qs) {
    const match = fts5Match(parseQuery(q))!;
    let t = performance.now();
    stmt.all(match, 10);
    floor.push(performance.now() - t);
    t = performance.now();
    hits += (await memory.recall({ query: q, limit: 10 })).length;
    ours.push(performance.now() - t);
    t = performance.now();
    stmtNs.all(match, 'notes', 10);
    floorNs.push(performance.now() - t);
    t = performance.now();
    await memory.recall({ query: q, namespace: 'notes', limit: 10 });
    oursNs.push(performance.now() - t);
  }
  const line = (name: string, a: number[], b: number[]) =>
    `  ${name.padEnd(22)} median ${fmt(pct(a, 0.5))} ms  p95 ${fmt(pct(a, 0.95))} ms   floor median ${fmt(pct(b, 0.5))} ms  p95 ${fmt(pct(b, 0.95))} ms   ratio ${fmt(pct(a, 0.5) / pct(b, 0.5), 2)}×`;
  console.log(`recall at ${label} documents (${QUERIES} queries of 1–3 words, limit 10, ${fmt(hits / QUERIES, 1)} hits/query):`);
  console.log(line('all namespaces', ours, floor));
  console.log(line('one namespace', oursNs, floorNs));
}

// ---- 1 + 2: recall, checkpoints and diffs ---------------------------------------------------

async function benchStore(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-memory-'));
  const store = await openStore({ workspace: dir });
  try {
    await applyMigrations(store.db, store.dialect, memoryMigrations);
    const clock = new FakeClock();
    const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: 'sqlite', clock, ids: sequentialIds('cp') });
    const raw = new SQLite(path.join(dir, '.subconscious', 'subconscious.db'), { readonly: true });

    const rate1 = await fill(memory, 0, SMALL);
    console.log(`wrote ${SMALL} documents at ${Math.round(rate1)} docs/s (batches of ${BATCH}, FTS5 kept in step by triggers)`);
    await timeRecall(memory, raw, `${SMALL / 1000}k`);
    if (LARGE > SMALL) {
      const rate2 = await fill(memory, SMALL, LARGE);
      console.log(`wrote ${LARGE - SMALL} more at ${Math.round(rate2)} docs/s`);
      await timeRecall(memory, raw, `${LARGE / 1000}k`);
    }

    // 2. 1% changed: half modified, 30% added, 20% removed.
    const changed = Math.round(LARGE / 100);
    const checkpointTimes: number[] = [];
    for (let k = 0; k < 5; k++) {
      const t0 = performance.now();
      await memory.createCheckpoint('warm-up');
      checkpointTimes.push(performance.now() - t0);
    }
    let t = performance.now();
    const cp = await memory.createCheckpoint('bench');
    checkpointTimes.push(performance.now() - t);
    const checkpointMs = pct(checkpointTimes, 0.5);
    const modified = Math.round(changed * 0.5);
    const added = Math.round(changed * 0.3);
    const removed = changed - modified - added;
    const step = Math.floor(LARGE / changed);
    for (let k = 0; k < modified; k++) {
      const i = k * step;
      await memory.write(NAMESPACES[i % NAMESPACES.length]!, [{ op: 'put', doc: doc(i, 1) }]);
    }
    await fill(memory, LARGE, LARGE + added);
    for (let k = 0; k < removed; k++) {
      const i = k * step + 1;
      await memory.write(NAMESPACES[i % NAMESPACES.length]!, [{ op: 'delete', external_id: `doc-${i}` }]);
    }
    const checkTimes: number[] = [];
    let changedSince = false;
    for (let k = 0; k < 50; k++) {
      t = performance.now();
      changedSince = await memory.changedSince(cp.seq);
      checkTimes.push(performance.now() - t);
    }
    const checkMs = pct(checkTimes, 0.5);
    const diffTimes: number[] = [];
    let diff = await memory.diffSinceCheckpoint(cp.id);
    for (let k = 0; k < 5; k++) {
      t = performance.now();
      diff = await memory.diffSinceCheckpoint(cp.id);
      diffTimes.push(performance.now() - t);
    }
    const diffMs = pct(diffTimes, 0.5);
    let text = renderDiff(diff);
    const renderTimes: number[] = [];
    for (let k = 0; k < 20; k++) {
      t = performance.now();
      text = renderDiff(diff);
      renderTimes.push(performance.now() - t);
    }
    const renderMs = pct(renderTimes, 0.5);
    t = performance.now();
    const scanned = raw.prepare('SELECT count(*) AS n, sum(length(title)) AS c FROM memory_documents').get() as { n: number };
    const scanMs = performance.now() - t;
    console.log(`\ncheckpoint + diff at ${LARGE / 1000}k documents with 1% changed (${modified} modified, ${added} added, ${removed} removed):`);
    console.log(`  createCheckpoint        ${fmt(checkpointMs)} ms median (one row: the sequence's high-water mark)`);
    console.log(`  changedSince(seq)       ${fmt(checkMs)} ms median → ${changedSince} (one primary-key read)`);
    console.log(
      `  diffSinceCheckpoint     ${fmt(diffMs)} ms median → ${diff.totals.added} added, ${diff.totals.modified} modified, ${diff.totals.removed} removed (one range scan on change_seq)`,
    );
    console.log(`  renderDiff              ${fmt(renderMs)} ms median (${text.split('\n').length} lines)`);
    console.log(`  for scale: a bare scan of all ${scanned.n} document rows (no diff logic) ${fmt(scanMs)} ms`);
    raw.close();
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 3: the conscious world's tokens against the changed memory ----------------------------

async function benchConscious(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-conscious-'));
  const store: Store = await openStore({ workspace: dir });
  try {
    await applyMigrations(store.db, store.dialect, { ...memoryMigrations, ...consciousMigrations });
    const clock = new FakeClock();
    const ids = sequentialIds('c');
    const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'dry-run', timeoutMs: 10_000 };
    const reply = JSON.stringify([
      {
        title: 'Reply to the pending request',
        description: 'Someone is waiting.',
        source: 'email',
        priority: 'important',
        actionable: true,
        requires_confirmation: false,
        has_complex_action: false,
        source_label: 'Mail',
      },
    ]);
    const llm = createLlm({
      models: { local: endpoint, agent: endpoint },
      db: tablesView<LedgerTables>(store.db),
      clock,
      ids,
      inProcessModel: () => dryRunModel({ modelId: 'dry-run', reply: () => reply }),
    });
    const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: 'sqlite', clock, ids });
    const world = createConsciousWorld({
      db: tablesView<ConsciousTables>(store.db),
      memory,
      settings: DEFAULT_CONSCIOUS_SETTINGS,
      workspace: dir,
      clock,
      emit: () => undefined,
    });
    const instance = new Instance(world, {
      db: tablesView<EngineTables>(store.db),
      llm,
      clock,
      ids,
      events: new EventBus(() => clock.now()),
      log: silentLogger,
      checkpointer: new StoreCheckpointer(tablesView<GraphTables>(store.db), clock),
    });
    const tokens = async () =>
      (await tablesView<LedgerTables>(store.db)
        .selectFrom('model_calls')
        .select((eb) => [eb.fn.countAll<number>().as('calls'), eb.fn.sum<number>('input_tokens').as('input'), eb.fn.sum<number>('output_tokens').as('output')])
        .where('world', '=', 'conscious')
        .executeTakeFirstOrThrow()) as { calls: number; input: number | null; output: number | null };

    console.log('\nconscious world, tokens per run against the changed memory (dry-run model; tokens estimated at 4 chars/token):');
    console.log('  changed docs  namespaces  model calls  input tokens  output tokens');
    let next = 0;
    for (const size of [0, 1, 10, 100, 1_000, 5_000]) {
      const ops = new Map<string, WriteOp[]>();
      for (let k = 0; k < size; k++, next++) {
        const ns = NAMESPACES[next % NAMESPACES.length]!;
        ops.set(ns, [...(ops.get(ns) ?? []), { op: 'put', doc: doc(next) }]);
      }
      for (const [ns, list] of ops) await memory.write(ns, list);
      const before = await tokens();
      await clock.advance(5 * 60_000);
      const outcome = await instance.tick();
      const after = await tokens();
      const namespaces = (await memory.namespaces()).filter((n) => n.documents > 0).length;
      console.log(
        `  ${String(size).padStart(12)}  ${String(namespaces).padStart(10)}  ${String(after.calls - before.calls).padStart(11)}  ${String((after.input ?? 0) - (before.input ?? 0)).padStart(12)}  ${String((after.output ?? 0) - (before.output ?? 0)).padStart(13)}   (${outcome.kind})`,
      );
    }
    // The quiet path: memory unchanged since the last run.
    const n = 1_000;
    const callsBefore = (await tokens()).calls;
    const cpu = process.cpuUsage();
    const wall = performance.now();
    for (let k = 0; k < n; k++) await instance.tick();
    const used = process.cpuUsage(cpu);
    console.log(
      `  quiet tick (memory unchanged), through the engine: ${fmt((performance.now() - wall) / n)} ms wall, ${fmt((used.user + used.system) / 1000 / n)} ms CPU, model calls ${(await tokens()).calls - callsBefore}`,
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`memory benchmark (SQLite, ${os.cpus().length} cores, node ${process.version})\n`);
await benchStore();
await benchConscious();
