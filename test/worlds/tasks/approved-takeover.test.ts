/**
 * Issue 17 §1 for approved escalations, on both dialects: a person's approval is a
 * `tasks.approved_action` job committed before the answer returns, and a worker killed while
 * holding it has it taken over by another worker (B, the harness's service and job loop) once its
 * lease lapsed. Worker A runs on its own fake clock and is "killed" by never being advanced or
 * answered again. Stages: queued (A held the job, its run not begun), mid-call, mid-effect (a write
 * A began and never heard back from), answered (the final answer arrived, A died before the row),
 * mid-commit (the row settled, the job not completed), and cut off too often. Each: one effect at
 * most, the ledger's rows equal the model server's requests, no row left running, the detail says
 * "taken over from" A.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { MAX_CUT_OFF_RUNS } from '../../../src/bots/index.js';
import { createCoordinator, type Coordinator } from '../../../src/coordination/index.js';
import { EventBus, FakeClock, silentLogger, uuid } from '../../../src/core/index.js';
import { TasksService, type LogEntry } from '../../../src/worlds/tasks/index.js';
import { cutOffTooOftenText } from '../../../src/worlds/tasks/exec-checkpoint.js';
import type { RecordedRequest, ScriptedReply } from '../../support/model-server.js';
import { testDialects } from '../../support/stores.js';
import { createTasksHarness, dyingRunner, fencedTaskTitle, hasToolResult, isAgent, systemOf, type TasksHarness } from './harness.js';

const dialects = await testDialects();
const UNTIL = { timeout: 30_000, interval: 20 };

interface WorkerA {
  service: TasksService;
  coordinator: Coordinator;
  clock: FakeClock;
}

/**
 * A second worker on the same database with its own clock, "killed" by never advancing it again.
 * `hangAfterWrite`: its tool calls happen and never return. `freezeAfterAnswer`: its runs' outcomes
 * never reach it (killed once the answer arrived). `loop: false`: it sends jobs but never works them.
 */
async function workerA(h: TasksHarness, o: { hangAfterWrite?: boolean; freezeAfterAnswer?: boolean; loop?: boolean } = {}): Promise<WorkerA> {
  const clock = new FakeClock(h.clock.now());
  const { approvals, agent } = dyingRunner(h, clock, o);
  // B's pg-boss and its queue are up first: two instances must not create one schema or queue at once
  // (nothing is queued between the stages, so B's fetch claims nothing).
  expect(await h.coordinator.fetch('tasks.approved_action')).toEqual([]);
  const coordinator = await createCoordinator({ store: h.store, clock, ids: uuid });
  const service = new TasksService({
    db: h.store.db,
    clock,
    ids: uuid,
    events: new EventBus(),
    log: silentLogger,
    workspace: h.store.workspace,
    timezone: 'UTC',
    agent,
    approvals,
    coordinator,
  });
  if (o.loop !== false) await service.startJobs();
  return { service, coordinator, clock };
}

/** A card in words for a new task (as a tick that escalated leaves it): the approved run writes `file`. */
async function card(h: TasksHarness, title: string): Promise<{ id: string; logId: string }> {
  const service = h.world.service;
  const task = await service.addTask({ title });
  const rows = await service.logs.openRows(`tick:${title}`, h.clock.now(), [task], uuid);
  const logId = rows.get(task.id)!.id;
  await service.logs.update(logId, { decision: 'escalate', model_decision: 'escalate', result: 'Waiting for approval', exec_state: 'done' });
  const id = uuid();
  await service.escalations.create({
    id,
    task_id: task.id,
    log_id: logId,
    title,
    description: `Write it to ${fileOf(title)}`,
    analysis: null,
    priority: 'normal',
    skill_related: false,
  });
  return { id, logId };
}

const fileOf = (title: string) => `${title.replace(/\W+/g, '-').toLowerCase()}.txt`;
const isApproved = (req: RecordedRequest) => isAgent(req) && systemOf(req).startsWith('The user approved');

/**
 * The approved runs' model: per title, the first request of each run writes the file, the one
 * after the tool result says so. `hang` titles: every request hangs (the worker that asked is dying).
 */
function script(h: TasksHarness) {
  const hang = new Set<string>();
  const writes = new Map<string, number>();
  h.server.handle((req): ScriptedReply => {
    if (!isApproved(req)) return { status: 500, message: 'unscripted' };
    const title = fencedTaskTitle(req)!;
    if (hang.has(title)) return { hang: true };
    if (hasToolResult(req)) return { text: `Wrote ${fileOf(title)}.` };
    // A continued run is told what was done: it does not write again.
    if (systemOf(req).includes('Tool steps already taken')) return { text: `Already wrote ${fileOf(title)}.` };
    writes.set(title, (writes.get(title) ?? 0) + 1);
    return { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(h.store.workspace, fileOf(title)), content: title } }] };
  });
  return { hang, writes, requests: (title: string) => h.server.chatRequests.filter((r) => isApproved(r) && fencedTaskTitle(r) === title).length };
}

/**
 * B's clock moves on past A's lease; then, while an approved job is still queued or held, a little
 * more at a time (B's job loop polls on it, and its fetches are real I/O) until B took it and finished.
 */
async function lapse(h: TasksHarness): Promise<void> {
  await h.clock.advance(2 * h.coordinator.leaseMs + 1);
  for (let i = 0; i < 400 && (await liveJobs(h)) > 0; i++) {
    await new Promise((r) => setTimeout(r, 25));
    await h.clock.advance(h.coordinator.leaseMs / 2);
  }
}

async function liveJobs(h: TasksHarness): Promise<number> {
  const size = (await h.coordinator.sizes()).find((s) => s.queue === 'tasks.approved_action');
  return (size?.queued ?? 0) + (size?.active ?? 0);
}

async function row(h: TasksHarness, logId: string): Promise<LogEntry> {
  return (await h.world.service.logs.get(logId))!;
}

async function settled(h: TasksHarness, logId: string): Promise<LogEntry> {
  await vi.waitFor(async () => expect((await row(h, logId)).exec_state).toBe('done'), UNTIL);
  return row(h, logId);
}

async function ledgerRows(h: TasksHarness): Promise<number> {
  return (await h.store.db.selectFrom('model_calls').select('id').execute()).length;
}

async function nothingLeft(h: TasksHarness): Promise<void> {
  const running = await h.store.db.selectFrom('subconscious_log').select('id').where('exec_state', 'in', ['running', 'executed']).execute();
  expect(running).toEqual([]);
  await vi.waitFor(async () => expect(await liveJobs(h)).toBe(0), UNTIL);
  expect(await ledgerRows(h)).toBe(h.server.chatRequests.length);
}

describe.each(dialects)('an approved action whose worker was killed, on %s', (dialect) => {
  it('queued, mid-call, mid-commit: taken over after the lease and run once; the detail says from whom', { timeout: 180_000 }, async () => {
    const h = await createTasksHarness({ dialect });
    try {
      const model = script(h);

      // 1. Queued: A committed the job and held it, its run not begun; killed there. B runs it, once.
      let a = await workerA(h, { loop: false });
      const queued = await card(h, 'Queued note');
      const answered = await a.service.approve(queued.id);
      expect(answered.run_id).toBeTruthy();
      expect(await a.coordinator.fetch('tasks.approved_action')).toHaveLength(1);
      expect(await row(h, queued.logId)).toMatchObject({ decision: 'in_progress', exec_state: 'running' });
      await lapse(h);
      expect(await settled(h, queued.logId)).toMatchObject({ decision: 'act', result: 'Wrote queued-note.txt.', run_id: answered.run_id });
      expect(readFileSync(path.join(h.store.workspace, 'queued-note.txt'), 'utf8')).toBe('Queued note');
      expect(model.writes.get('Queued note')).toBe(1);
      expect((await h.world.service.logDetail(queued.logId)).approved_action).toMatchObject({ taken_over_from: a.coordinator.workerId });

      // 2. Mid-call: A's model call never returns. B continues the execution (a new run), once.
      a = await workerA(h);
      const midCall = await card(h, 'Mid call note');
      model.hang.add('Mid call note');
      await a.service.approve(midCall.id);
      await vi.waitFor(() => expect(model.requests('Mid call note')).toBe(1), UNTIL);
      model.hang.delete('Mid call note');
      await lapse(h);
      expect(await settled(h, midCall.logId)).toMatchObject({ decision: 'act', result: 'Wrote mid-call-note.txt.' });
      expect(model.requests('Mid call note')).toBe(3); // A's cut-off call, then B's run: the write and its account
      expect(model.writes.get('Mid call note')).toBe(1);
      const detail = await h.world.service.logDetail(midCall.logId);
      expect(detail.approved_action).toMatchObject({ taken_over_from: a.coordinator.workerId, calls: { calls: 2 } });
      expect(detail.approved_action!.tool_calls.map((t) => [t.tool, t.outcome])).toEqual([['fs__write_file', 'ok']]);

      // 3. Mid-commit: A settled the row, then died before completing its job. B runs nothing again.
      a = await workerA(h, { loop: false });
      const committed = await card(h, 'Committed note');
      await a.service.approve(committed.id);
      expect(await a.coordinator.fetch('tasks.approved_action')).toHaveLength(1);
      await h.world.service.logs.update(committed.logId, { decision: 'act', result: 'Done by A.', exec_state: 'done' });
      const before = h.server.chatRequests.length;
      await lapse(h);
      expect(h.server.chatRequests.length).toBe(before);
      expect(await row(h, committed.logId)).toMatchObject({ decision: 'act', result: 'Done by A.' });

      await nothingLeft(h);
    } finally {
      await h.dispose();
    }
  });

  it('mid-effect, answered, cut off too often: nothing is run or paid for twice, and the row says what may have happened', { timeout: 180_000 }, async () => {
    const h = await createTasksHarness({ dialect });
    try {
      const model = script(h);

      // 1. Mid-effect: A's write happened and A died before hearing back. B does not write again:
      // the row says it may have happened, for the person.
      let a = await workerA(h, { hangAfterWrite: true });
      const effect = await card(h, 'Effect note');
      await a.service.approve(effect.id);
      await vi.waitFor(() => expect(existsSync(path.join(h.store.workspace, 'effect-note.txt'))).toBe(true), UNTIL);
      await vi.waitFor(async () => expect((await h.world.service.logs.execCheckpoint(effect.logId)).checkpoint?.in_flight).toHaveLength(1), UNTIL);
      const before = h.server.chatRequests.length;
      await lapse(h);
      const stopped = await settled(h, effect.logId);
      expect(stopped.decision).toBe('failed');
      expect(stopped.result).toMatch(/^Cut off while fs__write_file \(on fs\) was running, when its worker \(.+\) stopped: it may or may not have happened/);
      expect(h.server.chatRequests.length).toBe(before);
      expect(model.writes.get('Effect note')).toBe(1);

      // 2. Answered: A's run got its final answer, and A died before writing the row. B settles it
      // from the checkpointed answer: no model call.
      a = await workerA(h, { freezeAfterAnswer: true });
      const answer = await card(h, 'Answered note');
      await a.service.approve(answer.id);
      await vi.waitFor(async () => expect((await h.world.service.logs.execCheckpoint(answer.logId)).checkpoint?.answer).not.toBeNull(), UNTIL);
      const paid = h.server.chatRequests.length;
      await lapse(h);
      expect(await settled(h, answer.logId)).toMatchObject({ decision: 'act', result: 'Wrote answered-note.txt.' });
      expect(h.server.chatRequests.length).toBe(paid);
      expect(model.writes.get('Answered note')).toBe(1);
      expect((await h.world.service.logDetail(answer.logId)).approved_action).toMatchObject({ taken_over_from: a.coordinator.workerId, calls: { calls: 2 } });

      // 3. Cut off too often: A's run is the MAX_CUT_OFF_RUNS-th to begin. B stops it, says so, runs nothing.
      a = await workerA(h);
      const poison = await card(h, 'Poison note');
      model.hang.add('Poison note');
      await a.service.approve(poison.id);
      await vi.waitFor(() => expect(model.requests('Poison note')).toBe(1), UNTIL);
      const cp = (await h.world.service.logs.execCheckpoint(poison.logId)).checkpoint!;
      expect(cp.runs).toBe(1); // counted before its model call
      await h.world.service.logs.writeExecCheckpoint(poison.logId, { ...cp, runs: MAX_CUT_OFF_RUNS });
      await lapse(h);
      expect(await settled(h, poison.logId)).toMatchObject({ decision: 'failed', result: cutOffTooOftenText(MAX_CUT_OFF_RUNS, a.coordinator.workerId) });
      expect(model.requests('Poison note')).toBe(1);

      await nothingLeft(h);
    } finally {
      await h.dispose();
    }
  });

  it('approve with wait: the job runs on this worker and the answer is the finished row', { timeout: 60_000 }, async () => {
    const h = await createTasksHarness({ dialect });
    try {
      script(h);
      const waited = await card(h, 'Waited note');
      const result = await h.world.service.approve(waited.id, { wait: true });
      expect(result.log).toMatchObject({ id: waited.logId, decision: 'act', result: 'Wrote waited-note.txt.', exec_state: 'done', run_id: result.run_id });
      await nothingLeft(h);
    } finally {
      await h.dispose();
    }
  });
});
