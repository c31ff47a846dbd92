/**
 * SIGKILL during execution: a process running the tasks world's commit is killed while the
 * agent executes a write task. The restarted process resumes the same tick from its checkpoint:
 * no second evaluation, the task that finished is not executed again, the write task that was
 * cut off is not re-run (it may have acted) and is logged as interrupted, and the task after it
 * runs.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, uuid } from '../../../src/core/index.js';
import { openStore } from '../../../src/store/index.js';
import { INTERRUPTED, TasksService } from '../../../src/worlds/tasks/index.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import { openTestStore, type TestStore } from '../../support/stores.js';
import { fencedTaskTitle, hasToolResult, isAgent, isEvaluation, isLocalExecution, packageBin, tasksInPrompt } from './harness.js';

const CHILD = fileURLToPath(new URL('./fixtures/tick-child.ts', import.meta.url));

let server: ModelServer | undefined;
let store: TestStore | undefined;
afterEach(async () => {
  await server?.close();
  await store?.dispose();
});

function runChild(workspace: string, baseUrl: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, WORKSPACE: workspace, MODEL_URL: baseUrl, FS_SERVER_BIN: packageBin('@modelcontextprotocol/server-filesystem'), SUBCONSCIOUS_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, output: () => out };
}

describe('tasks world: SIGKILL during execution', () => {
  it('restarts without executing an already-executed task twice', async () => {
    store = await openTestStore('sqlite');
    const ws = store.workspace;
    const clock = new FakeClock(Date.now() - 60_000);
    const setup = new TasksService({ db: store.db, clock, ids: uuid, events: new EventBus(), workspace: ws });
    for (const t of await setup.listTasks()) await setup.updateTask(t.id, { enabled: false });
    // Created a second apart: due tasks execute in creation order.
    const one = await setup.addTask({ title: 'Write note one to one.txt' });
    await clock.advance(1000);
    const two = await setup.addTask({ title: 'Write note two to two.txt' });
    await clock.advance(1000);
    const three = await setup.addTask({ title: 'Check the build status' });
    await store.close();

    server = await startModelServer({ models: ['local-model', 'agent-model'] });
    let killNow!: () => void;
    const reachedTwo = new Promise<void>((resolve) => (killNow = resolve));
    server.handle((req) => {
      if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'act', reason: 'due' })) } };
      if (isLocalExecution(req)) return { text: 'Build is green.' };
      if (isAgent(req)) {
        const title = fencedTaskTitle(req);
        if (title === one.title) {
          return hasToolResult(req) ? { text: 'Wrote note one.' } : { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, 'one.txt'), content: 'one' } }] };
        }
        if (title === two.title) {
          killNow();
          return { hang: true };
        }
      }
      return { status: 500, message: 'unscripted' };
    });

    const first = runChild(ws, server.baseUrl);
    await Promise.race([reachedTwo, first.exited.then(() => Promise.reject(new Error(`child exited early:\n${first.output()}`)))]);
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const agentOneBefore = server.chatRequests.filter((r) => isAgent(r) && fencedTaskTitle(r) === one.title).length;
    expect(agentOneBefore).toBe(2);

    const second = runChild(ws, server.baseUrl);
    const exit = await second.exited;
    expect(exit.code, second.output()).toBe(0);
    const outcome = JSON.parse(second.output().trim().split('\n').at(-1)!) as { kind: string; resumed: boolean };
    expect(outcome).toMatchObject({ kind: 'committed', resumed: true });

    // One evaluation in all; task one's agent steps were not repeated; task two was not re-run.
    expect(server.chatRequests.filter(isEvaluation)).toHaveLength(1);
    expect(server.chatRequests.filter((r) => isAgent(r) && fencedTaskTitle(r) === one.title)).toHaveLength(2);
    expect(server.chatRequests.filter((r) => isAgent(r) && fencedTaskTitle(r) === two.title)).toHaveLength(1);
    expect(server.chatRequests.filter(isLocalExecution)).toHaveLength(1);
    expect(readFileSync(path.join(ws, 'one.txt'), 'utf8')).toBe('one');

    const reopened = await openStore({ workspace: ws });
    try {
      const rows = await reopened.db.selectFrom('subconscious_log').selectAll().execute();
      expect(rows).toHaveLength(3);
      const byTask = (id: string) => rows.find((r) => r.task_id === id)!;
      expect(byTask(one.id)).toMatchObject({ decision: 'act', result: 'Wrote note one.', exec_state: 'done' });
      expect(byTask(two.id)).toMatchObject({ decision: 'failed', result: INTERRUPTED, exec_state: 'done' });
      expect(byTask(three.id)).toMatchObject({ decision: 'act', result: 'Build is green.', exec_state: 'done' });
    } finally {
      await reopened.close();
    }
  }, 60_000);
});
