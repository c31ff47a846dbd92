/**
 * README "Running several workers", run as written (issue 17 §5–6): the recipe's config from the
 * README, two `start --worker` processes and one face from dist/ on one Postgres, the token from
 * SUBCONSCIOUS_TOKEN. The face's status lists all three workers with their roles; a worker
 * SIGKILLed shows not alive within two lease periods (a short lease in the config; polled with a
 * deadline, the only waiting a real multi-process test needs). A job whose payload was hand-edited
 * into something that does not parse is moved aside with its reason, and the page's Workers
 * section shows the workers and that dead letter (real Chromium; screenshots in
 * test-output/screenshots/). On SQLite `start --worker` refuses and says why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinator, type Coordinator } from '../../src/coordination/index.js';
import { FakeClock, uuid } from '../../src/core/index.js';
import type { ClusterStatus, StatusResult, WorkerStatus } from '../../src/protocol/index.js';
import { CLI, ROOT, runCli } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { unreachableBaseUrl } from '../support/model-server.js';
import { TEST_PG_URL, openTestStore, postgresReachable, type TestStore } from '../support/stores.js';
import { horizontalOverflow, launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../web/support/browser.js';
import { ensurePageBuilt } from '../web/support/page-build.js';

const pg = await postgresReachable();
const LEASE_SECONDS = 2;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The README's recipe: its TOML block and the commands of its shell block. */
function readmeRecipe(): { toml: string; commands: string[] } {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = /<!-- recipe:several-workers -->([\s\S]*?)<!-- \/recipe:several-workers -->/.exec(readme)?.[1];
  if (!section) throw new Error('README.md has no recipe:several-workers section');
  const toml = /```toml\n([\s\S]*?)```/.exec(section)![1]!;
  const shell = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  const commands = shell.split('\n').filter((l) => l.startsWith('subconscious '));
  return { toml, commands };
}

async function modelEnv(): Promise<Record<string, string>> {
  const nowhere = await unreachableBaseUrl();
  return { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere, SUBCONSCIOUS_LOCAL_MODEL: 'm', SUBCONSCIOUS_AGENT_MODEL: 'm' };
}

interface Spawned {
  proc: ChildProcess;
  output(): string;
}

/** `subconscious start --worker` from dist/, resolved once it says it runs. */
function startWorkerProcess(workspace: string, env: Record<string, string>): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--enable-source-maps', CLI, 'start', '--worker', '--workspace', workspace], {
      cwd: ROOT,
      env: { ...process.env, SUBCONSCIOUS_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    const timer = setTimeout(() => reject(new Error(`worker did not start within 30 s:\n${log}`)), 30_000);
    const spawned = { proc, output: () => log };
    proc.stdout.on('data', (c: Buffer) => {
      log += c.toString();
      if (log.includes('is running (no HTTP face)')) {
        clearTimeout(timer);
        resolve(spawned);
      }
    });
    proc.stderr.on('data', (c: Buffer) => (log += c.toString()));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before starting:\n${log}`));
    });
    cleanups.push(
      () =>
        new Promise<void>((done) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return done();
          proc.once('exit', () => done());
          proc.kill('SIGTERM');
        }),
    );
  });
}

/** Poll `check` until it holds or `ms` passed (real processes: no fake clock reaches them). */
async function until<T>(what: string, ms: number, check: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== null) return got;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('start --worker on SQLite', () => {
  it('refuses: one process owns a SQLite file', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-worker-sqlite-'));
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    const res = await runCli(['start', '--worker'], workspace, await modelEnv());
    expect(res.code).toBe(78);
    expect(res.err).toMatch(/needs Postgres/);
    expect(res.err).toMatch(/one process owns a SQLite file/);
    expect(res.err).toContain('[config_invalid]');
  });
});

describe.skipIf(!pg)('README "Running several workers": two workers and one face on one Postgres', () => {
  let store: TestStore;
  let face: TestDaemon;
  let workers: Spawned[];
  const token = `recipe-${uuid().replace(/-/g, '')}`;

  const cluster = async (): Promise<ClusterStatus> => (await face.rpc<StatusResult>('subconscious.status')).cluster!;
  const pidOf = (s: Spawned) => s.proc.pid!;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    cleanups.push(() => store.dispose());
    const schema = /#(.+)$/.exec(store.location)![1]!;
    const url = `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const recipe = readmeRecipe();
    expect(recipe.commands).toHaveLength(3);
    const toml = recipe.toml.replace(/^url = ".*"$/m, `url = "${url}"`).replace(/^lease_seconds = \d+/m, `lease_seconds = ${LEASE_SECONDS}`);
    expect(toml).toContain(`lease_seconds = ${LEASE_SECONDS}`);
    const root = mkdtempSync(path.join(os.tmpdir(), 'subc-recipe-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const env = { ...(await modelEnv()), SUBCONSCIOUS_TOKEN: token };
    // The README's commands in order: worker-1, worker-2, then the face.
    workers = [];
    for (const command of recipe.commands) {
      const workspace = path.join(root, path.basename(/-w (\S+)/.exec(command)![1]!));
      mkdirSync(workspace);
      writeFileSync(path.join(workspace, 'subconscious.toml'), toml);
      if (command.includes('--worker')) workers.push(await startWorkerProcess(workspace, env));
      else {
        face = await startDaemon({ workspace, env, keepWorkspace: true });
        cleanups.push(() => face.dispose());
      }
    }
  }, 120_000);

  it('the face accepts the token from SUBCONSCIOUS_TOKEN', () => {
    expect(face.token).toBe(token);
  });

  it("the face's status lists all three workers with their roles, alive", async () => {
    const list = await until('three live workers', 10_000, async () => {
      const c = await cluster();
      const alive = c.workers.filter((w) => w.alive);
      return alive.length === 3 ? c.workers : null;
    });
    expect(
      list
        .filter((w) => w.role === 'worker')
        .map((w) => w.pid)
        .sort(),
    ).toEqual(workers.map(pidOf).sort());
    const faceRow = list.find((w) => w.role === 'face')!;
    expect(faceRow).toMatchObject({ host: os.hostname(), alive: true });
    for (const w of list) expect(w.id).toMatch(new RegExp(`^${os.hostname()}:${w.pid}:`));
    expect((await cluster()).lease_ms).toBe(LEASE_SECONDS * 1000);
    const printed = await runCli(['status'], face.workspace, await modelEnv());
    expect(printed.code).toBe(0);
    expect(printed.out).toMatch(/workers: 3 alive of 3 seen \(postgres, lease 2 s\)/);
    for (const w of workers) expect(printed.out).toMatch(new RegExp(`worker, ${os.hostname()} pid ${pidOf(w)}, alive`));
  });

  it('a worker killed with SIGKILL is shown not alive within two lease periods; the others stay alive', async () => {
    const victim = workers[0]!;
    const killedAt = Date.now();
    victim.proc.kill('SIGKILL');
    const row = await until<WorkerStatus>('the killed worker shown not alive', 2 * LEASE_SECONDS * 1000, async () => {
      const w = (await cluster()).workers.find((x) => x.pid === pidOf(victim));
      return w && !w.alive ? w : null;
    });
    expect(Date.now() - killedAt).toBeLessThan(2 * LEASE_SECONDS * 1000 + 1000);
    expect(row.role).toBe('worker');
    const rest = (await cluster()).workers.filter((w) => w.pid !== pidOf(victim));
    expect(rest.map((w) => w.alive)).toEqual([true, true]);
  });

  it('a hand-edited job is moved aside with its reason; the page shows the workers and the dead letter', async () => {
    // A worker of the cluster (this test's process) meets a row whose payload no longer parses.
    const coordinator: Coordinator = await createCoordinator({
      store,
      clock: new FakeClock(Date.now()),
      ids: uuid,
      bossSchema: `${/#(.+)$/.exec(store.location)![1]}_pgboss`,
    });
    cleanups.push(() => coordinator.stop());
    const bad = await coordinator.send({ queue: 'test.recipe', payload: { n: 1 }, key: 'hand-edited' });
    const good = await coordinator.send({ queue: 'test.recipe', payload: { n: 2 } });
    await sql`update coord_holds set payload = '{"n": 1' where job_id = ${bad}`.execute(store.db);
    expect((await coordinator.fetch('test.recipe', { batchSize: 5 })).map((j) => j.id)).toEqual([good]);
    expect(await coordinator.complete(good)).toBe(true);
    const dead = (await cluster()).dead_letters.find((d) => d.id === bad)!;
    expect(dead).toMatchObject({ queue: 'test.recipe', key: 'hand-edited' });
    expect(dead.reason).toMatch(/payload is not JSON/);
    expect((await cluster()).queues.find((q) => q.queue === 'test.recipe')).toMatchObject({ dead: 1, queued: 0, active: 0 });

    await ensurePageBuilt();
    const browser: TestBrowser = await launchBrowser();
    cleanups.push(() => browser.close());
    const { page, errors } = await browser.newPage();
    await page.goto(face.pageUrl);
    const section = page.getByTestId('workers');
    await section.scrollIntoViewIfNeeded();
    await expect.poll(() => section.getByTestId('worker-row').count(), { timeout: 10_000 }).toBe(3);
    expect(await section.locator('[data-testid=worker-row][data-alive=false]').count()).toBe(1);
    expect(await section.locator('[data-testid=worker-row][data-role=worker][data-alive=true]').count()).toBe(1);
    await expect.poll(() => section.getByTestId('workers-summary').textContent()).toMatch(/2 of 3 alive on Postgres/);
    const deadRow = section.getByTestId('dead-letter-row').filter({ hasText: 'hand-edited' });
    expect(await deadRow.textContent()).toMatch(/test\.recipe.*hand-edited.*payload is not JSON/);
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await section.screenshot({ path: path.join(SCREENSHOT_DIR, 'workers-1280x800.png') });
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await horizontalOverflow(page)).toBe(0);
    await section.screenshot({ path: path.join(SCREENSHOT_DIR, 'workers-360x740.png') });
    expect(errors).toEqual([]);
  }, 60_000);
});
