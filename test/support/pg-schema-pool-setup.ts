/**
 * Vitest global setup for the recycled Postgres test schemas (pg-schema-pool.ts): names the run
 * (the workers inherit it, so they share one pool), drops the run's pooled schemas at its end, and
 * drops those of runs that ended without doing so (killed) once they are a day old: a run of
 * another checkout going on at the same time keeps its own.
 */
import pg from 'pg';
import { dropPooled, POOL_RUN_ENV } from './pg-schema-pool.js';
import { postgresReachable, TEST_PG_URL } from './stores.js';

const STALE_MS = 24 * 3600_000;

export async function setup(): Promise<() => Promise<void>> {
  const run = `r${Date.now().toString(36)}`;
  process.env[POOL_RUN_ENV] = run;
  if (!(await postgresReachable())) return async () => undefined;
  await withClient(async (client) => {
    const { rows } = await client.query<{ run: string }>(
      `SELECT DISTINCT substring(nspname from '^[pc]_(r[0-9a-z]+)_') AS run FROM pg_namespace WHERE nspname ~ '^[pc]_r[0-9a-z]+_'`,
    );
    for (const { run: old } of rows) {
      const started = Number.parseInt(old.slice(1), 36);
      if (Number.isFinite(started) && Date.now() - started > STALE_MS) await dropPooled(client, old);
    }
  }).catch(() => undefined);
  return async () => {
    await withClient((client) => dropPooled(client, run)).catch(() => undefined);
  };
}

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
