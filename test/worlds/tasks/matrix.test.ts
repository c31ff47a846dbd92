/**
 * Seed 1's whole decision × intent × approval matrix, end to end: the engine's Instance runs
 * the tick, the scripted model server answers the evaluation, the local text execution and the
 * agent's steps, the real filesystem MCP server performs the writes. Routing as seed 1 says,
 * with issue 9: `act` is a local text answer whatever the intent; `escalate` on a write task runs
 * the agent tainted, where the writes the task's words name are approved on its behalf.
 */
import { implement, tasksContract } from '../../../src/protocol/index.js';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RpcDispatcher } from '../../../src/core/index.js';
import { testDialects } from '../../support/stores.js';
import { tasksRpcHandlers, type Escalation, type LogDetail, type LogEntry, type Task } from '../../../src/worlds/tasks/index.js';
import {
  createTasksHarness,
  fencedTaskTitle,
  hasToolResult,
  isAgent,
  isEvaluation,
  isLocalExecution,
  systemOf,
  tasksInPrompt,
  toolNames,
  type TasksHarness,
} from './harness.js';

const T = {
  noop: 'Summarize Notion updates',
  readAct: 'Check the build status',
  writeAct: 'Write the daily note to note-act.txt',
  writeEscalate: 'Send the digest to digest.txt',
  readEscalateRecommend: 'Check urgent emails',
  readEscalatePlain: 'Review the README for typos',
  skill: 'Check that the mail connection works',
} as const;

const PLAN: Record<string, 'noop' | 'act' | 'escalate'> = {
  [T.noop]: 'noop',
  [T.readAct]: 'act',
  [T.writeAct]: 'act',
  [T.writeEscalate]: 'escalate',
  [T.readEscalateRecommend]: 'escalate',
  [T.readEscalatePlain]: 'escalate',
  [T.skill]: 'escalate',
};

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

function script(harness: TasksHarness): void {
  const ws = harness.store.workspace;
  const write = (file: string, content: string) => ({ toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, file), content } }] });
  harness.server.handle((req) => {
    if (isEvaluation(req)) {
      const decisions = tasksInPrompt(req)
        .filter((t) => PLAN[t.title])
        .map((t) => ({ task_id: t.id, decision: PLAN[t.title], reason: `scripted: ${PLAN[t.title]}` }));
      return { json: { decisions } };
    }
    if (isLocalExecution(req)) return { text: `Local answer for: ${fencedTaskTitle(req)}` };
    if (isAgent(req)) {
      const title = fencedTaskTitle(req);
      const done = hasToolResult(req);
      if (systemOf(req).includes('The user approved')) return done ? { text: 'Forwarded the 3 urgent emails.' } : write('forwarded.txt', 'three urgent emails');
      if (title === T.writeAct) return done ? { text: 'Wrote the daily note.' } : write('note-act.txt', 'daily note');
      if (title === T.writeEscalate) return done ? { text: 'Sent the digest.' } : write('digest.txt', 'digest');
      if (title === T.readEscalateRecommend)
        return { text: 'Found 3 urgent emails from the bank.\nRECOMMENDED ACTION: [critical] Forward 3 urgent emails to forwarded.txt' };
      if (title === T.readEscalatePlain) return { text: 'The README has no typos.' };
      if (title === T.skill) return { text: 'The mail token expired.\nRECOMMENDED ACTION: Re-authenticate the Gmail integration' };
    }
    return { status: 500, message: `unscripted request: ${systemOf(req).slice(0, 80)}` };
  });
}

describe.each(await testDialects())('tasks world on %s: decision × intent × approval', (dialect) => {
  it('routes every decision as the seed says, and approval runs once while dismissal runs nothing', async () => {
    h = await createTasksHarness({ dialect });
    const rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(h.world.service)));
    const add = (title: string, extra: Record<string, unknown> = {}) => rpc.call('subconscious.tasks_add', { title, ...extra }) as Promise<Task>;
    const noopTask = await add(T.noop, { recurrence: 'cron:0 9 * * *' });
    const readAct = await add(T.readAct, { recurrence: 'once' });
    const writeAct = await add(T.writeAct, { needs_tools: true });
    const writeEscalate = await add(T.writeEscalate, { needs_tools: true });
    const recommend = await add(T.readEscalateRecommend);
    const plain = await add(T.readEscalatePlain);
    const skill = await add(T.skill);
    // Write intent is the person's choice: the others are read-only.
    expect([noopTask, readAct, recommend, plain, skill].map((t) => t.needs_tools)).toEqual([false, false, false, false, false]);
    expect([writeAct, writeEscalate].map((t) => t.needs_tools)).toEqual([true, true]);
    // A cron task is first due at its next time: make it due now.
    h.clock.set(noopTask.next_run_at!);
    script(h);

    const outcome = await h.instance.tick();
    expect(outcome.kind, outcome.message).toBe('committed');

    // One evaluation call for all due tasks (3 system defaults + 7 user tasks).
    const evaluations = h.server.chatRequests.filter(isEvaluation);
    expect(evaluations).toHaveLength(1);
    expect(tasksInPrompt(evaluations[0]!)).toHaveLength(10);

    const log = (await rpc.call('subconscious.log_list', { limit: 100 })) as LogEntry[];
    expect(log).toHaveLength(10);
    expect(new Set(log.map((r) => r.task_id)).size).toBe(10);
    const row = (id: string) => log.find((r) => r.task_id === id)!;

    // System defaults the model left out: noop, "no decision".
    for (const r of log.filter((l) => l.task_id.startsWith('system:'))) {
      expect(r).toMatchObject({ decision: 'noop', result: 'Nothing new', reason: 'no decision' });
    }
    // noop → "Nothing new", schedule advances (cron → its next time).
    expect(row(noopTask.id)).toMatchObject({ decision: 'noop', result: 'Nothing new', model_decision: 'noop' });
    const tasks = (await rpc.call('subconscious.tasks_list')) as Task[];
    const task = (id: string) => tasks.find((t) => t.id === id)!;
    expect(task(noopTask.id).last_run_at).toBe(noopTask.next_run_at);
    expect(task(noopTask.id).next_run_at).toBe(noopTask.next_run_at! + 24 * 3600_000);

    // act on a read-only task → the local model, purpose `execute`; `once` completes.
    expect(row(readAct.id)).toMatchObject({ decision: 'act', result: `Local answer for: ${T.readAct}`, exec_mode: 'local' });
    expect(task(readAct.id).completed).toBe(true);
    // act on a write task → the local model too (seed 1): a text answer, no tool, nothing written.
    expect(row(writeAct.id)).toMatchObject({ decision: 'act', result: `Local answer for: ${T.writeAct}`, exec_mode: 'local' });
    expect(existsSync(path.join(h.store.workspace, 'note-act.txt'))).toBe(false);
    expect(h.server.chatRequests.filter(isLocalExecution)).toHaveLength(2);

    // escalate on a write task → the agent, tainted: the write its words name ("… to digest.txt")
    // is approved on the task's behalf, and the approval trail says so.
    expect(row(writeEscalate.id)).toMatchObject({ decision: 'act', model_decision: 'escalate', result: 'Sent the digest.', exec_mode: 'tainted' });
    expect(readFileSync(path.join(h.store.workspace, 'digest.txt'), 'utf8')).toBe('digest');
    const approvals = await h.store.db.selectFrom('approvals').selectAll().execute();
    expect(approvals.map((a) => [a.tool, a.state])).toEqual([['write_file', 'approved']]);
    const writeRequests = h.server.chatRequests.filter((r) => isAgent(r) && fencedTaskTitle(r) === T.writeEscalate);
    expect(writeRequests).toHaveLength(2);
    for (const r of writeRequests) expect(toolNames(r)).toContain('fs__write_file');
    const detail = (await rpc.call('subconscious.log_detail', { id: row(writeEscalate.id).id })) as LogDetail;
    expect(detail.execution).toMatchObject({ mode: 'tainted', purpose: 'execute_write', calls: { calls: 2, model: 'agent-model' } });
    expect(detail.execution!.tool_calls).toEqual([expect.objectContaining({ tool: 'fs__write_file', outcome: 'ok' })]);
    expect(detail.approvals).toEqual([expect.objectContaining({ state: 'approved', by: 'subconscious', note: 'the task’s own words name this write' })]);

    // escalate on a read-only task → analysis mode: writing tools are not even offered.
    const analysisRequests = h.server.chatRequests.filter(
      (r) => isAgent(r) && [T.readEscalateRecommend, T.readEscalatePlain, T.skill].includes(fencedTaskTitle(r) as never),
    );
    expect(analysisRequests).toHaveLength(3);
    for (const r of analysisRequests) {
      expect(toolNames(r)).not.toContain('fs__write_file');
      expect(toolNames(r)).toContain('fs__read_text_file');
    }
    // … without a recommendation: its result is logged, done.
    expect(row(plain.id)).toMatchObject({ decision: 'act', model_decision: 'escalate', result: 'The README has no typos.', exec_mode: 'analysis' });
    // … with RECOMMENDED ACTION: a pending escalation, the row waits for approval, nothing written yet.
    expect(row(recommend.id)).toMatchObject({ decision: 'escalate', result: 'Waiting for approval', exec_mode: 'analysis' });
    expect(existsSync(path.join(h.store.workspace, 'forwarded.txt'))).toBe(false);
    const pending = (await rpc.call('subconscious.escalations_list', { status: 'pending' })) as Escalation[];
    expect(pending).toHaveLength(2);
    const forward = pending.find((e) => e.task_id === recommend.id)!;
    expect(forward).toMatchObject({
      priority: 'critical',
      description: 'Forward 3 urgent emails to forwarded.txt',
      skill_related: false,
      log_id: row(recommend.id).id,
    });
    // A skill-related escalation is marked ("Fix in Skills").
    const fix = pending.find((e) => e.task_id === skill.id)!;
    expect(fix).toMatchObject({ priority: 'normal', skill_related: true, description: 'Re-authenticate the Gmail integration' });

    // The ledger counts every call: 1 evaluation, 2 local executions, 2 write-run steps, 3 analysis steps.
    const ledger = await h.store.db.selectFrom('model_calls').select(['purpose', 'role']).where('world', '=', 'tasks').execute();
    const byPurpose = (p: string) => ledger.filter((l) => l.purpose === p);
    expect(byPurpose('evaluate').map((l) => l.role)).toEqual(['local']);
    expect(byPurpose('execute').map((l) => l.role)).toEqual(['local', 'local']);
    expect(byPurpose('execute_write')).toHaveLength(2);
    expect(byPurpose('execute_analysis')).toHaveLength(3);
    expect(ledger).toHaveLength(h.server.chatRequests.length);

    // Approve: the agent runs the recommended action once, in full mode.
    const before = h.server.chatRequests.length;
    const approved = (await rpc.call('subconscious.escalations_approve', { id: forward.id, wait: true })) as { log: LogEntry };
    expect(approved.log).toMatchObject({ decision: 'act', result: 'Forwarded the 3 urgent emails.', exec_mode: 'full' });
    expect(readFileSync(path.join(h.store.workspace, 'forwarded.txt'), 'utf8')).toBe('three urgent emails');
    const approvedRequests = h.server.chatRequests.slice(before);
    expect(approvedRequests).toHaveLength(2);
    expect(toolNames(approvedRequests[0]!)).toContain('fs__write_file');
    const ledgerApproved = await h.store.db.selectFrom('model_calls').select('id').where('purpose', '=', 'approved_action').execute();
    expect(ledgerApproved).toHaveLength(2);
    // Approving again changes nothing and runs nothing.
    await expect(rpc.call('subconscious.escalations_approve', { id: forward.id })).rejects.toMatchObject({ code: 'conflict' });
    expect(h.server.chatRequests).toHaveLength(before + 2);

    // Dismiss: nothing runs; the row reads "Skipped".
    const dismissed = (await rpc.call('subconscious.escalations_dismiss', { id: fix.id })) as Escalation;
    expect(dismissed.status).toBe('dismissed');
    await expect(rpc.call('subconscious.escalations_approve', { id: fix.id })).rejects.toMatchObject({ code: 'conflict' });
    expect(h.server.chatRequests).toHaveLength(before + 2);
    const after = (await rpc.call('subconscious.log_list', { task_id: skill.id })) as LogEntry[];
    expect(after[0]).toMatchObject({ decision: 'dismissed', result: 'Skipped' });
    expect(((await rpc.call('subconscious.escalations_list', { status: 'pending' })) as Escalation[]).length).toBe(0);

    // Every change was an event.
    const types = new Set(h.events.map((e) => e.type));
    for (const t of ['tasks.changed', 'tasks.log_changed', 'tasks.escalation_changed']) expect(types).toContain(t);
  });
});
