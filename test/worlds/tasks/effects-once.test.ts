/**
 * Issue 9 §5, "effects happen once": each execution is keyed by its log row. A process killed after
 * a text execution finished and before commit applied it leaves the row `executed` with its
 * outcome; the resumed tick applies that outcome and never calls the model for it again.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { EventBus, FakeClock, uuid } from '../../../src/core/index.js';
import { TasksService } from '../../../src/worlds/tasks/index.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import { openProductStore } from '../../support/stores.js';
import { fencedTaskTitle, isEvaluation, isLocalExecution, LOCAL_MODEL, AGENT_MODEL, tasksInPrompt } from './harness.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/tick-process.ts', import.meta.url));
let server: ModelServer | undefined;
let workspace: string | undefined;
afterEach(async () => {
  await server?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  server = workspace = undefined;
});

function run(ws: string, baseUrl: string, hang: boolean, onLine: (line: string, kill: () => void) => void): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, ws, baseUrl, hang ? 'yes' : 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let buf = '';
    child.stdout.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        onLine(line, () => child.kill('SIGKILL'));
      }
    });
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => (signal === 'SIGKILL' || code === 0 ? resolve(code) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

it('a text execution that finished before a crash during commit is applied on resume, not run again', async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-effects-once-'));
  const ws = workspace;
  const store = await openProductStore({ workspace: ws });
  const setup = new TasksService({
    db: store.db,
    clock: new FakeClock(Date.now() - 60_000),
    ids: uuid,
    events: new EventBus(),
    workspace: ws,
    timezone: 'UTC',
  });
  for (const t of await setup.listTasks()) await setup.updateTask(t.id, { enabled: false });
  const task = await setup.addTask({ title: 'Summarize the release notes' });
  await store.close();

  server = await startModelServer({ models: [LOCAL_MODEL, AGENT_MODEL] });
  server.handle((req) => {
    if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'act', reason: 'new notes' })) } };
    if (isLocalExecution(req)) return { text: 'Three fixes, nothing urgent.' };
    return { status: 500, message: 'unscripted' };
  });
  const executions = () => server!.chatRequests.filter((r) => isLocalExecution(r) && fencedTaskTitle(r) === task.title).length;

  let applying = false;
  await run(ws, server.baseUrl, true, (line, kill) => {
    if (line === 'APPLYING') {
      applying = true;
      kill();
    }
  });
  expect(applying).toBe(true);
  expect(executions()).toBe(1);
  const between = await openProductStore({ workspace: ws });
  const left = await between.db.selectFrom('subconscious_log').selectAll().where('task_id', '=', task.id).executeTakeFirstOrThrow();
  expect(left).toMatchObject({ decision: 'in_progress', exec_state: 'executed' });
  await between.close();

  let outcome: { kind: string; resumed: boolean } | undefined;
  await run(ws, server.baseUrl, false, (line) => {
    if (line.startsWith('OUTCOME ')) outcome = JSON.parse(line.slice(8)) as typeof outcome;
  });
  expect(outcome).toMatchObject({ kind: 'committed', resumed: true });
  // Applied from the row, not executed again: one evaluation, one execution, one row.
  expect(executions()).toBe(1);
  expect(server.chatRequests.filter(isEvaluation)).toHaveLength(1);
  const after = await openProductStore({ workspace: ws });
  try {
    const rows = await after.db.selectFrom('subconscious_log').selectAll().where('task_id', '=', task.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ decision: 'act', result: 'Three fixes, nothing urgent.', exec_state: 'done' });
    const calls = await after.db.selectFrom('model_calls').select('purpose').execute();
    expect(calls.map((c) => c.purpose).sort()).toEqual(['evaluate', 'execute']);
  } finally {
    await after.close();
  }
}, 60_000);
