/**
 * The crash scenario against the real daemon (`subconscious start`, as a person runs
 * it): the daemon is SIGKILLed while the agent executes a write task in the tasks world's
 * commit, then started again on the same workspace. The app's own wiring must finish the job:
 * the scheduler resumes the open tick at once, the dead process's tick lease is reclaimed, the
 * task that already ran is not executed again, the write task that was cut off is continued from
 * its checkpoint (issue 17: its run had taken no step, so it simply runs again, once) and the task
 * after it runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, uuid } from '../../../src/core/index.js';
import { openProductStore as openStore } from '../../support/stores.js';
import { TasksService, type LogEntry } from '../../../src/worlds/tasks/index.js';
import { startDaemon, type TestDaemon } from '../../support/daemon.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import {
  AGENT_MODEL,
  LOCAL_MODEL,
  fencedTaskTitle,
  hasToolResult,
  isAgent,
  isEvaluation,
  isLocalExecution,
  packageBin,
  systemOf,
  tasksInPrompt,
} from './harness.js';

let server: ModelServer | undefined;
let daemon: TestDaemon | undefined;
let workspace: string | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await server?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  daemon = server = workspace = undefined;
});

function config(baseUrl: string, ws: string): string {
  return [
    '[heartbeat]',
    'interval_minutes = 60',
    'timezone = "UTC"',
    '[models.local]',
    `base_url = ${JSON.stringify(baseUrl)}`,
    `model = "${LOCAL_MODEL}"`,
    '[models.agent]',
    `base_url = ${JSON.stringify(baseUrl)}`,
    `model = "${AGENT_MODEL}"`,
    '[[mcp.servers]]',
    'name = "fs"',
    `command = ${JSON.stringify(process.execPath)}`,
    `args = [${JSON.stringify(packageBin('@modelcontextprotocol/server-filesystem'))}, ${JSON.stringify(ws)}]`,
    '',
  ].join('\n');
}

/** The daemon is another process: poll it (bounded) until `check` holds. */
async function until<T>(d: TestDaemon, read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  let value = await read();
  for (let i = 0; i < 400 && !check(value); i++) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  if (!check(value)) throw new Error(`${what}: ${JSON.stringify(value)}\n${d.output()}`);
  return value;
}

/** The daemon is another process: wait (bounded) until its log rows settle. */
async function settledLog(d: TestDaemon, count: number): Promise<LogEntry[]> {
  let rows: LogEntry[] = [];
  for (let i = 0; i < 400; i++) {
    rows = await d.rpc<LogEntry[]>('subconscious.log_list', { limit: 100 });
    if (rows.length >= count && rows.every((r) => r.decision !== 'in_progress')) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`log rows did not settle: ${JSON.stringify(rows.map((r) => [r.task_title, r.decision, r.exec_state]))}\n${d.output()}`);
}

describe('tasks world in the real daemon: SIGKILL during execution', () => {
  it('the restarted daemon resumes the tick, continues the cut-off execution and executes no task twice', async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-tasks-kill-'));
    const ws = workspace;
    // The tasks exist before the daemon's first tick (which starts as soon as it is up).
    const store = await openStore({ workspace: ws });
    const clock = new FakeClock(Date.now() - 60_000);
    const setup = new TasksService({ db: store.db, clock, ids: uuid, events: new EventBus(), workspace: ws, timezone: 'UTC' });
    for (const t of await setup.listTasks()) await setup.updateTask(t.id, { enabled: false });
    // Created a second apart: due tasks execute in creation order.
    const one = await setup.addTask({ title: 'Write note one to one.txt', needs_tools: true });
    await clock.advance(1000);
    const two = await setup.addTask({ title: 'Write note two to two.txt', needs_tools: true });
    await clock.advance(1000);
    const three = await setup.addTask({ title: 'Check the build status' });
    expect([one.needs_tools, two.needs_tools, three.needs_tools]).toEqual([true, true, false]);
    await store.close();

    server = await startModelServer({ models: [LOCAL_MODEL, AGENT_MODEL] });
    let reachedTwo!: () => void;
    let hangTwo = true;
    const twoRunning = new Promise<void>((resolve) => (reachedTwo = resolve));
    // The write tasks need their tools (escalate: the agent runs); the read-only one answers in text (act).
    const decide = (id: string) => (id === three.id ? 'act' : 'escalate');
    server.handle((req) => {
      if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: decide(t.id), reason: 'due' })) } };
      if (isLocalExecution(req)) return { text: 'Build is green.' };
      if (isAgent(req)) {
        const title = fencedTaskTitle(req);
        if (title === one.title) {
          return hasToolResult(req)
            ? { text: 'Wrote note one.' }
            : { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, 'one.txt'), content: 'one' } }] };
        }
        if (title === two.title) {
          if (hangTwo) {
            reachedTwo();
            return { hang: true };
          }
          return hasToolResult(req)
            ? { text: 'Wrote note two.' }
            : { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, 'two.txt'), content: 'two' } }] };
        }
      }
      return { status: 500, message: 'unscripted' };
    });

    daemon = await startDaemon({ workspace: ws, config: config(server.baseUrl, ws), env: { SUBCONSCIOUS_LOG_LEVEL: 'warn' } });
    await twoRunning;
    await daemon.kill();
    expect(readFileSync(path.join(ws, 'one.txt'), 'utf8')).toBe('one');
    const agentCalls = (title: string) => server!.chatRequests.filter((r) => isAgent(r) && fencedTaskTitle(r) === title).length;
    expect(agentCalls(one.title)).toBe(2);
    hangTwo = false; // its continuation answers

    await daemon.restart();
    const rows = await settledLog(daemon, 3);
    expect(rows).toHaveLength(3);
    const byTask = (id: string) => rows.find((r) => r.task_id === id)!;
    expect(byTask(one.id)).toMatchObject({ decision: 'act', result: 'Wrote note one.', exec_state: 'done' });
    // Cut off in its first model call (no step taken): the resumed tick continues it, and it writes once.
    expect(byTask(two.id)).toMatchObject({ decision: 'act', result: 'Wrote note two.', exec_state: 'done' });
    expect(byTask(three.id)).toMatchObject({ decision: 'act', result: 'Build is green.', exec_state: 'done' });
    expect(new Set(rows.map((r) => r.tick_id)).size).toBe(1);

    // One evaluation in all; nothing executed twice; the resumed tick is the daemon's first success.
    expect(server.chatRequests.filter(isEvaluation)).toHaveLength(1);
    expect(agentCalls(one.title)).toBe(2);
    expect(agentCalls(two.title)).toBe(3); // the cut-off call, then the continued run's write and answer
    expect(server.chatRequests.filter(isLocalExecution)).toHaveLength(1);
    expect(readFileSync(path.join(ws, 'two.txt'), 'utf8')).toBe('two');
    const detail = await daemon.rpc<{ execution: { taken_over_from: string | null } }>('subconscious.log_detail', { id: byTask(two.id).id });
    expect(detail.execution.taken_over_from).toMatch(/:\d+:/); // the killed daemon's worker id
    const status = await daemon.rpc<{ instances: { world: string; total_ticks: number; consecutive_failures: number; last_outcome: string }[] }>(
      'subconscious.status',
    );
    expect(status.instances.find((i) => i.world === 'tasks')).toMatchObject({ total_ticks: 1, consecutive_failures: 0, last_outcome: 'committed' });
    expect(await daemon.stop()).toBe(0);
  }, 90_000);

  it('a text-only execution cut off by SIGKILL is asked again on resume, once, and not at the next tick (issue 17)', async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-tasks-kill-local-'));
    const ws = workspace;
    const store = await openStore({ workspace: ws });
    const clock = new FakeClock(Date.now() - 60_000);
    const setup = new TasksService({ db: store.db, clock, ids: uuid, events: new EventBus(), workspace: ws, timezone: 'UTC' });
    for (const t of await setup.listTasks()) await setup.updateTask(t.id, { enabled: false });
    // `once` tasks: a finished one is not due again, so the next tick shows what an interrupted one does.
    const first = await setup.addTask({ title: 'Summarize the release notes', recurrence: 'once' });
    await clock.advance(1000);
    const second = await setup.addTask({ title: 'Summarize the open tickets', recurrence: 'once' });
    await store.close();

    server = await startModelServer({ models: [LOCAL_MODEL, AGENT_MODEL] });
    let reachedSecond!: () => void;
    let hangSecond = true;
    const secondRunning = new Promise<void>((resolve) => (reachedSecond = resolve));
    server.handle((req) => {
      if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'act', reason: 'new notes' })) } };
      if (isLocalExecution(req)) {
        if (fencedTaskTitle(req) === first.title) return { text: 'Three fixes, nothing urgent.' };
        if (!hangSecond) return { text: 'Twelve open tickets.' };
        reachedSecond();
        return { hang: true };
      }
      return { status: 500, message: 'unscripted' };
    });
    const executions = (title: string) => server!.chatRequests.filter((r) => isLocalExecution(r) && fencedTaskTitle(r) === title).length;

    daemon = await startDaemon({ workspace: ws, config: config(server.baseUrl, ws), env: { SUBCONSCIOUS_LOG_LEVEL: 'warn' } });
    await secondRunning;
    await daemon.kill();
    expect(executions(second.title)).toBe(1);
    hangSecond = false; // its answer never arrived: the resumed tick asks again, and this time it answers

    await daemon.restart();
    const rows = await settledLog(daemon, 2);
    expect(rows.find((r) => r.task_id === first.id)).toMatchObject({ decision: 'act', result: 'Three fixes, nothing urgent.', exec_state: 'done' });
    // Its row was the execution's key: marked running before the call, it is continued once by the resumed tick.
    expect(rows.find((r) => r.task_id === second.id)).toMatchObject({ decision: 'act', result: 'Twelve open tickets.', exec_state: 'done' });
    expect(executions(first.title)).toBe(1);
    expect(executions(second.title)).toBe(2);
    expect(server.chatRequests.filter(isEvaluation)).toHaveLength(1);

    // The next tick (a person's Run now): the `once` task's schedule moved on once, so it is not
    // due — not evaluated, not executed a third time.
    type Status = { instances: { world: string; total_ticks: number }[] };
    const ticks = async () => (await daemon!.rpc<Status>('subconscious.status')).instances.find((i) => i.world === 'tasks')?.total_ticks ?? 0;
    const before = await ticks();
    await daemon.rpc('subconscious.trigger', { world: 'tasks' });
    await until(daemon, ticks, (n) => n > before, 'the triggered tick did not finish');
    expect(executions(second.title)).toBe(2);
    expect(server.chatRequests.filter(isEvaluation)).toHaveLength(1);
    expect((await settledLog(daemon, 2)).filter((r) => r.task_id === second.id)).toHaveLength(1);
    expect(await daemon.stop()).toBe(0);
  }, 90_000);

  it('an approved action cut off by SIGKILL is a job: the restarted daemon takes it over and continues it, once (issue 17)', async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-tasks-kill-approved-'));
    const ws = workspace;
    const store = await openStore({ workspace: ws });
    const setup = new TasksService({
      db: store.db,
      clock: new FakeClock(Date.now() - 60_000),
      ids: uuid,
      events: new EventBus(),
      workspace: ws,
      timezone: 'UTC',
    });
    for (const t of await setup.listTasks()) await setup.updateTask(t.id, { enabled: false });
    const task = await setup.addTask({ title: 'Check the shared inbox for unpaid invoices' });
    expect(task.needs_tools).toBe(false);
    await store.close();

    server = await startModelServer({ models: [LOCAL_MODEL, AGENT_MODEL] });
    let evaluations = 0;
    let reachedApproved!: () => void;
    let hangApproved = true;
    const approvedRunning = new Promise<void>((resolve) => (reachedApproved = resolve));
    const isApproved = (req: Parameters<typeof isAgent>[0]) => isAgent(req) && systemOf(req).startsWith('The user approved');
    server.handle((req) => {
      if (isEvaluation(req)) {
        const decision = ++evaluations === 1 ? 'escalate' : 'noop';
        return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision, reason: 'invoice found' })) } };
      }
      if (isApproved(req)) {
        if (!hangApproved) return { text: 'Forwarded the overdue invoice to accounting.' };
        reachedApproved();
        return { hang: true };
      }
      if (isAgent(req)) return { text: 'One invoice is overdue.\nRECOMMENDED ACTION: important Forward the overdue invoice to accounting' };
      return { status: 500, message: 'unscripted' };
    });

    daemon = await startDaemon({ workspace: ws, config: config(server.baseUrl, ws), env: { SUBCONSCIOUS_LOG_LEVEL: 'warn' } });
    const d = daemon;
    type Pending = { id: string; log_id: string }[];
    const [escalation] = await until(
      d,
      () => d.rpc<Pending>('subconscious.escalations_list', { status: 'pending' }),
      (e) => e.length === 1,
      'no pending escalation',
    );
    await d.rpc('subconscious.escalations_approve', { id: escalation!.id });
    await approvedRunning;
    await d.kill();
    hangApproved = false;

    // No tick needed: the restarted daemon's job loop finds the dead worker's job (its process is
    // gone) and continues the run from its checkpoint.
    await d.restart();
    const rows = await until(
      d,
      () => d.rpc<LogEntry[]>('subconscious.log_list', { limit: 100 }),
      (r) => r.find((row) => row.id === escalation!.log_id)?.exec_state === 'done',
      'the cut-off approved action was not continued',
    );
    expect(rows.find((row) => row.id === escalation!.log_id)).toMatchObject({
      decision: 'act',
      result: 'Forwarded the overdue invoice to accounting.',
      exec_state: 'done',
    });
    expect(server.chatRequests.filter(isApproved)).toHaveLength(2); // the cut-off call, then the continued run's
    const detail = await d.rpc<{ approved_action: { taken_over_from: string | null } }>('subconscious.log_detail', { id: escalation!.log_id });
    expect(detail.approved_action.taken_over_from).toMatch(/:\d+:/);
    expect(await d.stop()).toBe(0);
  }, 90_000);
});
