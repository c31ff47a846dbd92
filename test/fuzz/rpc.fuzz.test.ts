/**
 * Issue 9 §6: property tests over every RPC method the real app serves (whatever modules it
 * has: the list comes from the app's own dispatcher), through the real HTTP door, on SQLite and
 * on Postgres, after seeding data. Each request's params are arbitrary JSON, or valid params
 * mutated once, or valid params (see support/params.ts). Asserted for every request:
 *
 * - the answer is a JSON-RPC 2.0 response with the request's id and either a result or a typed
 *   error: -32600, -32602, or -32000 with `data.code`; never -32603 (an internal error is a bug
 *   the fuzzer found), never an HTTP error, never a stack trace;
 * - a rejected call changed nothing: the row count of every table is what it was before it;
 * - the process stays alive: no unhandled rejection or uncaught exception, and afterwards the
 *   daemon still answers /healthz and `subconscious.status`;
 * - SQLite's `PRAGMA integrity_check` (and `foreign_key_check`) is ok at the end.
 *
 * One summary line per dialect gives the counts (requests, how they were made, outcomes).
 * Batches are fuzzed too: 1–8 such calls in one request, each answered in order.
 * Every method gets every kind: `FUZZ_RUNS` (default 2) single requests per method and kind, and
 * ceil(FUZZ_RUNS / 10) batches led by each method. The seed is new each run, so runs explore
 * further over time; `FUZZ_RUNS=25` is a deep run (~15,000 requests, minutes on Postgres), and
 * `FUZZ_SEED` replays a run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { silentLogger } from '../../src/core/index.js';
import { createHttpApp, listen, type Listening } from '../../src/server/http.js';
import { createMetrics } from '../../src/server/metrics.js';
import type { DialectName } from '../../src/store/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { openTestStore, testDialects, type TestStore } from '../support/stores.js';
import { scriptPageModels } from '../web/support/models.js';
import { anyJson, jsonSchemaOf, mutate, validParams } from './support/params.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 2);
const TOKEN = 'fuzz-token-0123456789abcdefghijklmnop';

/**
 * Calls never sent because they would legitimately block: the caller asked to wait for something
 * only a person or a long run ends (singles are drawn without them, batch members dropped).
 * Each entry says why.
 */
const BLOCKING: { method: string; when: (params: unknown) => boolean; why: string }[] = [
  {
    method: 'subconscious.escalations_approve',
    when: (p) => typeof p === 'object' && p !== null && (p as { wait?: unknown }).wait === true,
    why: '{wait: true} returns only when the approved agent run has finished',
  },
  {
    method: 'runtime.poll',
    when: (p) =>
      typeof p === 'object' &&
      p !== null &&
      typeof (p as { wait_seconds?: unknown }).wait_seconds === 'number' &&
      (p as { wait_seconds: number }).wait_seconds > 0,
    why: '{wait_seconds > 0} is a long-poll: it answers when a dispatch is written or the wait is over; without it the same poll answers at once, and is fuzzed',
  },
  {
    method: 'orchestration.send',
    when: (p) => typeof p === 'object' && p !== null && (p as { wait?: unknown }).wait === true,
    why: '{wait: true} returns only when the cycle has finished (live: an agent run of minutes); without it the same cycle runs, and is fuzzed',
  },
];

type Kind = 'arbitrary' | 'mutated' | 'valid';
interface Tally {
  requests: number;
  batches: number;
  batchCalls: number;
  skipped: number;
  byKind: Record<Kind, number>;
  results: number;
  errors: Map<string, number>;
  rejectedChecked: number;
}

interface Answer {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: { code?: string } };
}

function describeOutcome(body: Answer): string {
  if (!body.error) return 'result';
  return body.error.code === -32000 ? `-32000 ${body.error.data?.code ?? '?'}` : String(body.error.code);
}

/** POST one body to /rpc over a fresh connection. */
function post(server: Listening, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: '/rpc',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'content-length': Buffer.byteLength(body) },
        timeout: 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('the daemon did not answer within 15 s (a blocking call missing from BLOCKING?)')));
    req.on('error', reject);
    req.end(body);
  });
}

async function tableNames(db: Kysely<unknown>, dialect: DialectName): Promise<string[]> {
  const rows =
    dialect === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db)
      : await sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(
          db,
        );
  return rows.rows.map((r) => r.name);
}

/** Every table's row count in one query. */
async function rowCounts(db: Kysely<unknown>, tables: string[]): Promise<Record<string, number>> {
  const columns = tables.map((t, i) => sql`(select count(*) from ${sql.table(t)}) as ${sql.ref(`c${i}`)}`);
  const { rows } = await sql<Record<string, number | string>>`select ${sql.join(columns)}`.execute(db);
  return Object.fromEntries(tables.map((t, i) => [t, Number(rows[0]![`c${i}`])]));
}

/** Every short string stored anywhere (ids, titles, worlds): the fuzzer's vocabulary, so calls reach real rows. */
async function storedWords(db: Kysely<unknown>, tables: string[]): Promise<string[]> {
  const words = new Set<string>(['tasks', 'all', 'UTC', 'Europe/Paris', 'pending', 'once', 'cron:0 9 * * *']);
  for (const t of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(t)} limit 40`.execute(db);
    for (const row of rows) for (const v of Object.values(row)) if (typeof v === 'string' && v.length > 0 && v.length <= 120) words.add(v);
  }
  return [...words];
}

interface Rig {
  app: App;
  /** How many background-work events (ticks, agent runs) the app has emitted so far. */
  activity(): number;
  /** Harness cycles queued or running (from their events): background work a send started. */
  openCycles(): number;
  http: Listening;
  store: TestStore | null;
  workspace: string;
  close(): Promise<void>;
}

async function openRig(dialect: DialectName, models: ModelServer): Promise<Rig> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-fuzz-'));
  const store = dialect === 'postgres' ? await openTestStore('postgres') : null;
  const app = await createApp({
    workspace,
    log: silentLogger,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
    // The app closes the store it is given; the test store is disposed (schema dropped) after.
    ...(store ? { store: { ...store, close: async () => undefined } } : {}),
  });
  let activity = 0;
  const open = new Set<string>();
  const unsubscribe = app.events.subscribe((e) => {
    if (BACKGROUND_EVENTS.has(e.type)) activity++;
    if (e.type === 'orchestration.cycle') {
      const { cycle_id, status } = e.data as { cycle_id: string; status: string };
      if (status === 'done' || status === 'failed') open.delete(cycle_id);
      else open.add(cycle_id);
    }
  });
  const metrics = createMetrics(app.llm.ledger, app.events);
  const server = await listen(
    createHttpApp({ rpc: app.rpc, events: app.feed, token: TOKEN, metrics: metrics.registry, webRoot: null, log: silentLogger, health: async () => ({}) }),
    { host: '127.0.0.1', port: 0 },
  );
  return {
    app,
    http: server,
    store,
    workspace,
    activity: () => activity,
    openCycles: () => open.size,
    close: async () => {
      unsubscribe();
      await server.close();
      metrics.dispose();
      await app.close();
      await store?.dispose();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** Tasks (one with write intent), a tick that logs, acts, runs the agent and escalates, and the ledger rows it wrote. */
async function seedData(rig: Rig, models: ModelServer): Promise<void> {
  const page = scriptPageModels(models);
  page.decide('Escalate', 'escalate');
  page.analyse('Escalate', 'The report is ready to send.\nRECOMMENDED ACTION: Send the weekly report to the team.');
  page.decide('Summarise', 'act');
  page.act('Summarise', 'Three new tickets, none urgent.');
  page.decide('digest', 'act');
  const call = (method: string, params: unknown) => rig.app.rpc.call(method, params);
  await call('subconscious.tasks_add', { title: 'Summarise the new tickets', recurrence: 'pending' });
  await call('subconscious.tasks_add', { title: 'Escalate the weekly report', recurrence: 'pending', needs_tools: false });
  await call('subconscious.tasks_add', { title: 'Send the daily digest to #team', recurrence: 'pending', needs_tools: true });
  await call('subconscious.tasks_add', { title: 'Check the build every morning', recurrence: 'cron:0 9 * * *' });
  await rig.app.registry.tickOnce('tasks');
  await quiet(rig);
  // Approving runs an agent in the background and would write during later checks: settle
  // every escalation now (approve then gets a typed conflict), and stop the world ticking.
  const pending = (await call('subconscious.escalations_list', { status: 'pending' })) as { id: string }[];
  for (const e of pending) await call('subconscious.escalations_dismiss', { id: e.id });
  await call('subconscious.set_enabled', { world: 'tasks', enabled: false });
}

/** Events that mean work goes on after the answer (a tick the call triggered, an agent run). */
const BACKGROUND_EVENTS = new Set(['tick.started', 'tick.finished', 'agent.run', 'orchestration.cycle']);
const SETTLE_MS = 20;

/**
 * Until background work a call started is over: no tick and no agent run going, and no such
 * event for `SETTLE_MS` (a tick's last writes, such as its next due time, follow its events).
 * `since`: the activity count when the call was sent; nothing since, nothing to wait for.
 */
async function quiet(rig: Rig, since = -1): Promise<void> {
  // A tick triggered by a call writes its world's next time after it ends: the scheduler's own count covers that.
  const busy = () =>
    rig.app.registry.scheduler.inFlight() > 0 ||
    rig.app.registry.list().some((inst) => inst.running) ||
    rig.app.services.agent.activeRuns().length > 0 ||
    rig.openCycles() > 0;
  await new Promise((r) => setImmediate(r));
  if (!busy() && rig.activity() === since) return;
  const deadline = Date.now() + 10_000;
  let seen = rig.activity();
  for (;;) {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    if (!busy() && rig.activity() === seen) return;
    seen = rig.activity();
    if (Date.now() > deadline) throw new Error('background work did not settle within 10 s');
  }
}

describe('RPC fuzz', async () => {
  const dialects = await testDialects();
  let models: ModelServer;
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => crashes.push(err);

  beforeAll(async () => {
    models = await startModelServer();
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
    await models?.close();
  });

  it.each(dialects)(
    'every method, arbitrary and mutated params, on %s: typed answers only, rejected calls change nothing, the process and the database stay sound',
    async (dialect) => {
      models.reset();
      const rig = await openRig(dialect, models);
      try {
        await seedData(rig, models);
        const db = rig.app.store.db as unknown as Kysely<unknown>;
        // The event log records what background work announced meanwhile (ticks, presence): not state a call changes.
        const tables = (await tableNames(db, dialect)).filter((t) => t !== 'event_log');
        const words = await storedWords(db, tables);
        const seeded = await rowCounts(db, tables);
        expect(seeded.subconscious_tasks ?? 1).toBeGreaterThan(0);

        // The methods this app serves, whichever modules it has.
        const methods = rig.app.rpc.list().map((m) => m.name);
        // Per method, one arbitrary per kind: each (method, kind) is run on its own, so none is left to chance.
        const byMethod = methods.map((method) => {
          const schema = rig.app.rpc.paramsOf(method)!;
          const shaped = validParams(jsonSchemaOf(schema), words);
          const valid = shaped.filter((p) => schema.safeParse(p).success);
          const kinds: Record<Kind, fc.Arbitrary<{ method: string; kind: Kind; params: unknown }>> = {
            arbitrary: anyJson.map((params) => ({ method, kind: 'arbitrary' as Kind, params })),
            mutated: mutate(shaped).map((params) => ({ method, kind: 'mutated' as Kind, params })),
            valid: valid.map((params) => ({ method, kind: 'valid' as Kind, params })),
          };
          return kinds;
        });
        const anyCall = fc.oneof(...byMethod.flatMap((k) => [k.arbitrary, k.mutated, k.valid]));

        const tally: Tally = {
          requests: 0,
          batches: 0,
          batchCalls: 0,
          skipped: 0,
          byKind: { arbitrary: 0, mutated: 0, valid: 0 },
          results: 0,
          errors: new Map(),
          rejectedChecked: 0,
        };
        let before = await rowCounts(db, tables);
        let nextId = 1;
        const fuzzSeed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
        const started = performance.now();

        const count = (outcome: string) => tally.errors.set(outcome, (tally.errors.get(outcome) ?? 0) + 1);
        const expectTooLarge = (res: { status: number; text: string }) => {
          expect(res.status).toBe(413); // the body limit: a typed refusal too
          expect(JSON.parse(res.text)).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
          count('413 (body over 1 MB)');
        };
        /** One answer: typed, for this id. Returns whether it was a result. */
        const checkAnswer = (answer: Answer, id: number, method: string, body: string): boolean => {
          expect(answer.jsonrpc).toBe('2.0');
          expect(answer.id).toBe(id);
          expect('result' in answer !== 'error' in answer, JSON.stringify(answer).slice(0, 300)).toBe(true);
          if (!answer.error) {
            tally.results++;
            return true;
          }
          const { code, message, data } = answer.error;
          expect([-32600, -32602, -32000], `${method} ${body.slice(0, 300)} → ${JSON.stringify(answer).slice(0, 300)}`).toContain(code);
          if (code === -32000) expect(typeof data?.code).toBe('string');
          expect(typeof message).toBe('string');
          expect(message.length).toBeGreaterThan(0);
          expect(message).not.toMatch(/\n\s+at /);
          count(describeOutcome(answer));
          return false;
        };
        /** After a request: nothing changed if nothing was accepted; else wait for its background work and take the new counts. */
        const afterCall = async (accepted: boolean, what: string, since: number) => {
          if (!accepted) {
            expect(await rowCounts(db, tables), what).toEqual(before);
            tally.rejectedChecked++;
            return;
          }
          await quiet(rig, since);
          before = await rowCounts(db, tables);
        };

        const blocking = ({ method, params }: { method: string; params: unknown }) => BLOCKING.some((b) => b.method === method && b.when(params));
        const single = async ({ method, kind, params }: { method: string; kind: Kind; params: unknown }) => {
          const id = nextId++;
          const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
          const since = rig.activity();
          const res = await post(rig.http, body);
          tally.requests++;
          tally.byKind[kind]++;
          if (Buffer.byteLength(body) > 1_000_000) return expectTooLarge(res);
          expect(res.status, res.text).toBe(200);
          const accepted = checkAnswer(JSON.parse(res.text), id, method, body);
          await afterCall(accepted, `${method} ${body.slice(0, 300)}`, since);
        };
        // A seed per property: the same seed would give every method the same arbitrary JSON.
        let property = 0;
        for (const kinds of byMethod)
          for (const kind of ['arbitrary', 'mutated', 'valid'] as const)
            await fc.assert(
              fc.asyncProperty(
                kinds[kind].filter((c) => !blocking(c)),
                single,
              ),
              {
                numRuns: RUNS,
                seed: fuzzSeed + property++,
                endOnFailure: true,
              },
            );
        // Batches of such calls, one led by each method: each member answered, in order, typed.
        const batch = async (calls: { method: string; params: unknown }[]) => {
          const members = calls.filter((c) => !blocking(c));
          tally.skipped += calls.length - members.length;
          if (!members.length) return;
          const ids = members.map(() => nextId++);
          const body = JSON.stringify(members.map(({ method, params }, i) => ({ jsonrpc: '2.0', id: ids[i], method, params })));
          const since = rig.activity();
          const res = await post(rig.http, body);
          tally.batches++;
          tally.batchCalls += members.length;
          if (Buffer.byteLength(body) > 1_000_000) return expectTooLarge(res);
          expect(res.status, res.text).toBe(200);
          const answers = JSON.parse(res.text) as Answer[];
          expect(answers.map((a) => a.id)).toEqual(ids);
          let accepted = false;
          answers.forEach((a, i) => (accepted = checkAnswer(a, ids[i]!, members[i]!.method, body) || accepted));
          await afterCall(accepted, `batch ${body.slice(0, 300)}`, since);
        };
        for (const kinds of byMethod) {
          const lead = fc.oneof(kinds.arbitrary, kinds.mutated, kinds.valid);
          const calls = fc.tuple(lead, fc.array(anyCall, { maxLength: 7 })).map(([first, rest]) => [first, ...rest]);
          await fc.assert(fc.asyncProperty(calls, batch), { numRuns: Math.ceil(RUNS / 10), seed: fuzzSeed + property++, endOnFailure: true });
        }
        const seconds = (performance.now() - started) / 1000;

        // Alive and sound.
        expect(crashes).toEqual([]);
        const health = await new Promise<number>((resolve, reject) =>
          http.get({ host: '127.0.0.1', port: rig.http.port, path: '/healthz' }, (r) => resolve(r.statusCode ?? 0)).on('error', reject),
        );
        expect(health).toBe(200);
        const status = JSON.parse((await post(rig.http, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'subconscious.status' }))).text) as {
          result?: unknown;
        };
        expect(status.result).toBeTruthy();
        let integrity = 'Postgres: no file to check';
        if (dialect === 'sqlite') {
          const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db);
          expect(check.rows).toEqual([{ integrity_check: 'ok' }]);
          expect((await sql`pragma foreign_key_check`.execute(db)).rows).toEqual([]);
          integrity = 'integrity_check ok, foreign_key_check clean';
        }

        const errors = [...tally.errors.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`);
        const seededRows = Object.entries(seeded)
          .filter(([, n]) => n > 0)
          .map(([t, n]) => `${t} ${n}`)
          .join(', ');
        const calls = tally.requests + tally.batchCalls;
        console.log(
          `[fuzz ${dialect}] ${tally.requests} single requests + ${tally.batches} batches (${tally.batchCalls} calls) over ${methods.length} methods in ${seconds.toFixed(1)} s (seed ${fuzzSeed}); ` +
            `singles: ${tally.byKind.arbitrary} arbitrary, ${tally.byKind.mutated} mutated, ${tally.byKind.valid} valid; ${tally.skipped} batch members skipped as blocking — ` +
            `of ${calls} calls: ${tally.results} results, ${calls - tally.results} errors (${errors.join(', ')}); 0 internal (-32603), 0 HTTP 500; ` +
            `row counts unchanged after all ${tally.rejectedChecked} requests that changed nothing; ${integrity}; process alive; seeded rows: ${seededRows}`,
        );
      } finally {
        await rig.close();
      }
    },
    // The runs scale with the methods (95 now) and FUZZ_RUNS: a deep run (FUZZ_RUNS=25) takes
    // about 120 s on Postgres here. A safety net against a hang, not a time bound.
    300_000,
  );
});
