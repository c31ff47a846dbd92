/**
 * What a test store costs (issue 22, the suite's time): open + dispose, N rounds, the variants
 * interleaved round by round so that a machine's changing load falls on all of them alike.
 *   npx tsx devtools/test-store-timing.ts [rounds=10]
 * - sqlite: openTestStore('sqlite')
 * - pg-fresh: a fresh schema migrated by openStore and dropped after (the test stores before issue 22)
 * - pg-fresh-async: the same with synchronous_commit=off
 * - pg-test-store: openTestStore('postgres') as it is now
 */
import { openStore } from '../src/store/index.js';
import { productModules } from '../src/app/modules.js';
import { drainSchemaPool } from '../test/support/pg-schema-pool.js';
import { dropSchema, openTestStore, postgresReachable, TEST_PG_URL } from '../test/support/stores.js';

const rounds = Number(process.argv[2] ?? 10);
const migrations = productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : []));

type Variant = () => Promise<() => Promise<void>>;

function fresh(settings?: Record<string, string>): Variant {
  return async () => {
    const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
    const store = await openStore({ databaseUrl: TEST_PG_URL, schema, poolSize: 4, migrations, ...(settings ? { postgresSettings: settings } : {}) });
    return async () => {
      await store.close();
      await dropSchema(schema);
      await dropSchema(`${schema}_pgboss`);
    };
  };
}

const variants: Record<string, Variant> = {
  sqlite: async () => {
    const s = await openTestStore('sqlite');
    return () => s.dispose();
  },
};
if (await postgresReachable()) {
  variants['pg-fresh'] = fresh();
  variants['pg-fresh-async'] = fresh({ synchronous_commit: 'off' });
  variants['pg-test-store'] = async () => {
    const s = await openTestStore('postgres');
    return () => s.dispose();
  };
} else console.log('postgres unreachable: sqlite only');

const times: Record<string, { open: number[]; dispose: number[] }> = {};
for (let i = 0; i < rounds; i++) {
  for (const [name, open] of Object.entries(variants)) {
    const t0 = performance.now();
    const dispose = await open();
    const t1 = performance.now();
    await dispose();
    const t2 = performance.now();
    const t = (times[name] ??= { open: [], dispose: [] });
    t.open.push(t1 - t0);
    t.dispose.push(t2 - t1);
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = times['pg-fresh'];
for (const [name, t] of Object.entries(times)) {
  const total = t.open.map((o, i) => o + t.dispose[i]!);
  const ratio = base ? ` (${(mean(base.open.map((o, i) => o + base.dispose[i]!)) / mean(total)).toFixed(1)}x faster than pg-fresh)` : '';
  console.log(
    `${name.padEnd(15)} x${rounds}: open mean ${mean(t.open).toFixed(0)} ms (median ${median(t.open).toFixed(0)}), dispose mean ${mean(t.dispose).toFixed(0)} ms (median ${median(t.dispose).toFixed(0)}), total mean ${mean(total).toFixed(0)} ms${ratio}`,
  );
}
await drainSchemaPool(TEST_PG_URL);
