/**
 * An existing database upgrades in place with no loss (issue 8): databases written by release
 * 0.1.0 (test/fixtures/release-0.1.0/, made before worlds were modules) open under today's
 * module list and keep their tasks, log, escalations, ledger and state; the shipped migration
 * names are recognised (nothing runs twice); status, RPC and a tick work on them.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { silentLogger } from '../../src/core/index.js';
import type { Escalation, LogEntry, StatusResult, Task, UsageCalls } from '../../src/protocol/index.js';
import { defaultSqlitePath, openStore, type Store } from '../../src/store/index.js';
import { TEST_PG_URL, dropSchema, testDialects } from '../support/stores.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/release-0.1.0/', import.meta.url));
const PG_FIXTURE_SCHEMA = 'fixture_release_010';
/** What release 0.1.0 recorded (its README says how the run was made). */
const SHIPPED = ['0001_core', '0002_graph', '0003_agent', '0004_tasks', '0005_approval_owner', '0006_log_exec_owner', '0007_task_order_and_user_choice'];

const dialects = await testDialects();
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A workspace whose database is the fixture, as the release left it. */
async function releaseStore(dialect: string, workspace: string): Promise<{ env: NodeJS.ProcessEnv; open: () => Promise<Store> }> {
  if (dialect === 'sqlite') {
    const file = defaultSqlitePath(workspace);
    mkdirSync(path.dirname(file), { recursive: true });
    copyFileSync(path.join(FIXTURES, 'release-0.1.0.sqlite'), file);
    return { env: {}, open: () => openStore({ sqliteFile: file }) };
  }
  const schema = `t_upgrade_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const dump = readFileSync(path.join(FIXTURES, 'release-0.1.0.pg.sql'), 'utf8').replaceAll(PG_FIXTURE_SCHEMA, schema);
  const file = path.join(workspace, 'dump.sql');
  writeFileSync(file, dump);
  execFileSync('psql', ['-v', 'ON_ERROR_STOP=1', '-q', '-d', TEST_PG_URL, '-f', file], { stdio: 'pipe' });
  cleanups.push(() => dropSchema(schema));
  // The release's tables live in that schema: point the daemon at it, as a deployment's URL would.
  const url = `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return { env: { SUBCONSCIOUS_DATABASE_URL: url }, open: () => openStore({ databaseUrl: TEST_PG_URL, schema }) };
}

async function counts(store: Store): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['subconscious_tasks', 'subconscious_log', 'subconscious_escalations', 'model_calls', 'instance_state', 'approvals']) {
    const row = await (store.db as unknown as Kysely<Record<string, Record<string, unknown>>>)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

describe.each(dialects)('a database written by release 0.1.0, on %s', (dialect) => {
  it('opens under the module list and keeps every row; shipped migrations are not run again', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-upgrade-'));
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    const release = await releaseStore(dialect, workspace);
    const before = await release.open().then(async (s) => {
      try {
        return await counts(s);
      } finally {
        await s.close();
      }
    });
    expect(before).toEqual({ subconscious_tasks: 9, subconscious_log: 14, subconscious_escalations: 1, model_calls: 9, instance_state: 7, approvals: 0 });

    let app: App | undefined = await createApp({ workspace, env: release.env, log: silentLogger });
    cleanups.push(() => app?.close());
    const tasks = (await app.rpc.call('subconscious.tasks_list')) as Task[];
    expect(tasks.map((t) => t.title)).toEqual(
      expect.arrayContaining(['Check which emails I need to reply to', 'Summarize the release notes', 'Send the daily digest to #team', 'Watch the build']),
    );
    expect((await app.rpc.call('subconscious.log_list', { limit: 100 })) as LogEntry[]).toHaveLength(14);
    const escalations = (await app.rpc.call('subconscious.escalations_list', { status: 'pending' })) as Escalation[];
    expect(escalations).toHaveLength(1);
    expect(escalations[0]!.description).toMatch(/Forward the 3 urgent emails/);
    expect(((await app.rpc.call('usage.calls', { limit: 50 })) as UsageCalls).total).toBe(9);
    const status = (await app.rpc.call('subconscious.status')) as StatusResult;
    expect(status.instances.find((i) => i.world === 'tasks')).toMatchObject({ total_ticks: 2, consecutive_failures: 0 });
    await app.close();
    app = undefined;

    const after = await release.open();
    try {
      const now = await counts(after);
      // Nothing lost; the app only added its own rows (e.g. state keys), never removed one.
      for (const [table, n] of Object.entries(before)) expect(now[table], table).toBeGreaterThanOrEqual(n);
      expect(now.subconscious_tasks).toBe(9);
      expect(now.subconscious_log).toBe(14);
      expect(now.subconscious_escalations).toBe(1);
      expect(now.model_calls).toBe(9);
      // The ledger's pending/interrupted columns (0010_cluster_ledger_pending): every shipped row is a finished call, figures kept.
      const ledger = await (after.db as unknown as Kysely<{ model_calls: { state: string; input_tokens: number } }>)
        .selectFrom('model_calls')
        .select(['state', 'input_tokens'])
        .execute();
      expect(ledger.map((r) => r.state)).toEqual(Array(9).fill('done'));
      expect(ledger.reduce((n, r) => n + Number(r.input_tokens), 0)).toBeGreaterThan(0);
      const names = (
        await (after.db as unknown as Kysely<{ schema_migrations: { name: string } }>).selectFrom('schema_migrations').select('name').execute()
      ).map((r) => r.name);
      expect(names.filter((n) => SHIPPED.includes(n)).sort()).toEqual(SHIPPED);
    } finally {
      await after.close();
    }
  });
});
