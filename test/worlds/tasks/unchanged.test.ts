/**
 * Issue 10 §1, "zero calls when nothing changed": a due task whose inputs did not change since
 * its last "nothing new" is not sent to the model — no call, no row, and its line says
 * "unchanged since …". Each kind of change brings one evaluation back; the safety net
 * re-evaluates after `reevaluate_unchanged_after_minutes`; 0 is seed 1's literal behaviour.
 * Real parts: the store, the scripted model server, a real MCP server (one the test can break),
 * a real memory store.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, uuid } from '../../../src/core/index.js';
import { MemoryStore, memoryMigrations, type MemoryTables } from '../../../src/memory/index.js';
import { applyMigrations, tablesView } from '../../../src/store/index.js';
import type { LogDetail } from '../../../src/worlds/tasks/index.js';
import type { RecordedRequest, ScriptedReply } from '../../support/model-server.js';
import { openTestStore } from '../../support/stores.js';
import { createTasksHarness, isEvaluation, isLocalExecution, tasksInPrompt, userOf, type HarnessOptions, type TasksHarness } from './harness.js';

const MEMORY_SERVER = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url));
const MINUTE = 60_000;

let h: TasksHarness | undefined;
let scratch: string | undefined;
afterEach(async () => {
  await h?.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  h = scratch = undefined;
});

const allNoop = (req: RecordedRequest): ScriptedReply => ({
  json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'noop', reason: 'Nothing new since the last check.' })) },
});
const evaluations = () => h!.server.chatRequests.filter(isEvaluation);
/** The task ids of the evaluations made since `from` (one list per call). */
const askedSince = (from: number) =>
  evaluations()
    .slice(from)
    .map((r) => tasksInPrompt(r).map((t) => t.title));

async function tick(expected: 'quiet' | 'committed'): Promise<void> {
  await h!.clock.advance(5 * MINUTE);
  const outcome = await h!.instance.tick();
  expect(outcome.kind, outcome.message).toBe(expected);
}

/** A harness whose tasks have all been evaluated once ("nothing new"), with a skill the test can break. */
async function settled(opts: HarnessOptions & { titles?: string[] } = {}): Promise<{ mailFlag: string; ids: Record<string, string> }> {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'subc-skill-'));
  const mailFlag = path.join(scratch, 'broken');
  const wrapper = path.join(scratch, 'mail-server.mjs');
  // A real MCP server that refuses to start while the flag file exists (outside the workspace).
  writeFileSync(
    wrapper,
    `import { existsSync } from 'node:fs';\nif (existsSync(${JSON.stringify(mailFlag)})) { console.error('mail login expired'); process.exit(1); }\nawait import(${JSON.stringify(MEMORY_SERVER)});\n`,
  );
  h = await createTasksHarness({ ...opts, servers: [{ name: 'mail', command: process.execPath, args: [wrapper] }] });
  const ids: Record<string, string> = {};
  for (const title of opts.titles ?? ['Check the deploy queue', 'Send the daily digest to #team']) ids[title] = (await h.world.service.addTask({ title })).id;
  h.server.handle(allNoop);
  const first = await h.instance.tick();
  expect(first.kind, first.message).toBe('committed');
  return { mailFlag, ids };
}

describe('tasks world: nothing changed, nothing spent', () => {
  it('an unchanged workspace makes no call on the second tick: quiet, no row, "unchanged since", not a failure', async () => {
    await settled();
    const t1 = h!.clock.now();
    const rows = (await h!.world.service.listLog({ limit: 100 })).length;
    expect(evaluations()).toHaveLength(1);
    for (let i = 0; i < 12; i++) await tick('quiet');
    expect(evaluations()).toHaveLength(1);
    expect(await h!.world.service.listLog({ limit: 100 })).toHaveLength(rows);
    const status = await h!.instance.status();
    expect(status).toMatchObject({ consecutive_failures: 0, last_outcome: 'quiet', total_ticks: 13 });
    expect(status.last_summary).toBe('5 tasks unchanged since their last check: no call');
    for (const t of (await h!.world.service.listTasks()).filter((x) => x.enabled)) {
      expect(t.unchanged_since).toBe(t1);
      expect(t.why).toEqual({ kind: 'unchanged', at: t1, until: t1 + 360 * MINUTE, detail: null });
    }
  });

  it('a model that goes down while nothing changed costs no tick and no failure', async () => {
    await settled({ agent: false });
    h!.server.modelsFault = { status: 503, message: 'model loading' };
    h!.server.handle(() => ({ status: 503, message: 'down' }));
    for (let i = 0; i < 3; i++) await tick('quiet');
    expect((await h!.instance.status()).consecutive_failures).toBe(0);
    // The task list says why nothing is evaluated: the probe found the model down.
    await h!.world.service.health.check();
    const task = (await h!.world.service.listTasks()).find((t) => t.title === 'Check the deploy queue')!;
    expect(task.why.kind).toBe('model_unavailable');
    expect(task.why.detail).toMatch(/503|loading|unavailable/i);
  });

  it('each kind of change brings one evaluation back: task edited, skill failing, new failure, memory, a file, a new day', async () => {
    const store = await openTestStore('sqlite');
    await applyMigrations(store.db, store.dialect, memoryMigrations);
    const clock = new FakeClock();
    const memory = new MemoryStore({ db: tablesView<MemoryTables>(store.db), dialect: store.dialect, clock, ids: uuid });
    try {
      // A long safety net: only the changes bring evaluations back here.
      const { mailFlag, ids } = await settled({ store, clock, memoryStore: memory, settings: { reevaluateUnchangedAfterMinutes: 7 * 24 * 60 } });
      let seen = evaluations().length;
      await tick('quiet');

      // The task edited: only it is evaluated again.
      await h!.world.service.updateTask(ids['Check the deploy queue']!, { title: 'Check the deploy queue and the canary' });
      await tick('committed');
      expect(askedSince(seen)).toEqual([['Check the deploy queue and the canary']]);
      seen = evaluations().length;
      await tick('quiet');

      // A skill failing: every task sees the skills, so all are evaluated, in one call; then quiet again.
      const mailPid = (await h!.mcp!.check()).find((s) => s.name === 'mail')!.pid!;
      writeFileSync(mailFlag, 'x');
      process.kill(mailPid, 'SIGKILL');
      await waitFor(async () => (await h!.mcp!.check()).find((s) => s.name === 'mail')!.status !== 'connected');
      await tick('committed');
      expect(askedSince(seen)).toHaveLength(1);
      expect(askedSince(seen)[0]).toHaveLength(5);
      expect(userOf(evaluations().at(-1)!)).toMatch(/## System health[\s\S]*not connected: <untrusted-data label="skill">\n"mail"/);
      seen = evaluations().length;
      await tick('quiet');

      // A new failure: one task's execution fails; the next tick looks at everything once more.
      h!.server.handle((req) => {
        if (isEvaluation(req))
          return {
            json: {
              decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: t.title === 'Watch the build' ? 'act' : 'noop', reason: 'r' })),
            },
          };
        if (isLocalExecution(req)) return { status: 500, message: 'build server said no' };
        return { status: 500, message: 'unscripted' };
      });
      await h!.world.service.addTask({ title: 'Watch the build' });
      await tick('committed'); // the new task itself
      expect(askedSince(seen)).toEqual([['Watch the build']]);
      expect((await h!.world.service.listLog({ decision: 'failed' })).length).toBe(1);
      h!.server.handle(allNoop);
      seen = evaluations().length;
      await tick('committed');
      expect(askedSince(seen)).toHaveLength(1);
      expect(askedSince(seen)[0]).toHaveLength(6);
      seen = evaluations().length;
      await tick('quiet');

      // Memory changed: one evaluation, and the report quotes the store's diff since the last one.
      await memory.storeDocument({ namespace: 'mail', external_id: 'm1', title: 'Invoice 2291 overdue', body: 'Please pay.' });
      await tick('committed');
      expect(askedSince(seen)).toHaveLength(1);
      const report = userOf(evaluations().at(-1)!);
      expect(report).toContain('## Memory changes');
      expect(report).toContain('[added] Invoice 2291 overdue');
      expect(report).not.toContain('no memory source is connected');
      seen = evaluations().length;
      await tick('quiet');
      // … and what it already reported is not reported again.
      await memory.storeDocument({ namespace: 'mail', external_id: 'm2', title: 'Meeting moved to Friday', body: '…' });
      await tick('committed');
      const next = userOf(evaluations().at(-1)!);
      expect(next).toContain('[added] Meeting moved to Friday');
      expect(next).not.toContain('Invoice 2291');
      seen = evaluations().length;

      // A file in the workspace changed: one evaluation.
      writeFileSync(path.join(h!.store.workspace, 'notes.md'), 'new notes');
      await tick('committed');
      expect(askedSince(seen)).toHaveLength(1);
      seen = evaluations().length;
      await tick('quiet');

      // A new day: only the task about time ("daily") is evaluated again.
      const now = h!.clock.now();
      const nextDay = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate() + 1, 0, 1);
      await h!.clock.advance(nextDay - now);
      await tick('committed');
      expect(askedSince(seen)).toEqual([['Send the daily digest to #team']]);
      await tick('quiet');

      // The row detail says which report and answer decided a "nothing new".
      const row = (await h!.world.service.listLog({ taskId: ids['Send the daily digest to #team']! }))[0]!;
      const detail = (await h!.world.service.logDetail(row.id)) as LogDetail;
      expect(detail.entry).toMatchObject({ decision: 'noop', reason: 'Nothing new since the last check.' });
      expect(detail.report).toContain('# Situation report');
      expect(detail.evaluation).toMatchObject({ calls: 1, tasks_in_call: 1, model: 'local-model' });
      expect(detail.evaluation!.input_tokens).toBeGreaterThan(0);
      expect(detail.evaluation!.raw_answer).toContain('Nothing new since the last check.');
    } finally {
      await store.dispose();
    }
  }, 60_000);

  it('the safety net re-evaluates an unchanged task after reevaluate_unchanged_after_minutes; 0 evaluates every tick', async () => {
    await settled({ agent: false, settings: { reevaluateUnchangedAfterMinutes: 30 } });
    for (let i = 0; i < 5; i++) await tick('quiet'); // 25 minutes
    expect(evaluations()).toHaveLength(1);
    await tick('committed'); // 30 minutes: looked at again, all at once
    expect(evaluations()).toHaveLength(2);
    expect(tasksInPrompt(evaluations()[1]!)).toHaveLength(5);
    await tick('quiet');
    h!.settings.reevaluateUnchangedAfterMinutes = 0;
    for (let i = 0; i < 3; i++) await tick('committed');
    expect(evaluations()).toHaveLength(5);
    expect((await h!.world.service.listTasks()).find((t) => t.enabled)!.why.kind).toBe('due');
  });
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not reached');
}
