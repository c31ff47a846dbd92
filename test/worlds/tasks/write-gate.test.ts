/**
 * The write gate fails closed (issue 9 §1, "writes happen only where a person said so"): an
 * unknown write choice, a missing task, arguments the gate cannot read or rights taken away
 * during a run all mean "ask first", never "allowed".
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { namedWrite, writeChoiceOf, writesGranted } from '../../../src/worlds/tasks/index.js';
import { createTasksHarness, hasToolResult, isAgent, isEvaluation, tasksInPrompt, toolNames, userOf, type TasksHarness } from './harness.js';

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const TITLE = 'Write the weekly digest to notes.md';

describe('write gate: fails closed', () => {
  it('grants write rights only for a choice it knows a person made', () => {
    expect(writesGranted({ needs_tools: true, write_choice: 'person' })).toBe(true);
    expect(writesGranted({ needs_tools: true, write_choice: 'older_version' })).toBe(false);
    expect(writesGranted({ needs_tools: true, write_choice: 'v3_future' as never })).toBe(false);
    expect(writesGranted({ needs_tools: 1 as never, write_choice: 'person' })).toBe(false);
    expect(writesGranted(undefined)).toBe(false);
    expect(writesGranted(null)).toBe(false);
    // An unknown stored value with rights is a guess to confirm, not a grant.
    expect(writeChoiceOf('v3_future', true)).toBe('older_version');
    expect(writeChoiceOf(null, false)).toBe('none');
  });

  it('a call whose arguments or targets it cannot read is not the task’s own', () => {
    const file = '/ws/notes.md';
    expect(namedWrite(TITLE, 'write_file', { path: file, content: 'x' })).toBe(true);
    expect(namedWrite(TITLE, 'write_file', [file])).toBe(false);
    expect(namedWrite(TITLE, 'write_file', null)).toBe(false);
    expect(namedWrite(TITLE, 'write_file', 'notes.md')).toBe(false);
    expect(namedWrite(TITLE, 'write_file', { path: 42, content: 'x' })).toBe(false);
    expect(namedWrite(TITLE, 'write_file', { path: { name: 'notes.md' }, content: 'x' })).toBe(false);
    expect(namedWrite(TITLE, 'write_file', { path: [], content: 'x' })).toBe(false);
    expect(namedWrite(TITLE, 'write_file', { path: [file, 7], content: 'x' })).toBe(false);
    expect(namedWrite(TITLE, 'write_file', { path: '  ', content: 'x' })).toBe(false);
  });

  it('an unknown stored write choice runs the task read-only and the page asks the person', async () => {
    h = await createTasksHarness();
    for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
    const task = await h.world.service.addTask({ title: TITLE, needs_tools: true });
    await h.store.db.updateTable('subconscious_tasks').set({ write_choice: 'granted_by_a_newer_version' }).where('id', '=', task.id).execute();
    expect((await h.world.service.listTasks()).find((t) => t.id === task.id)).toMatchObject({ needs_tools: true, write_choice: 'older_version' });
    h.server.handle((req) => {
      if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'escalate', reason: 'new notes' })) } };
      if (isAgent(req)) return { text: 'RECOMMENDED ACTION: write the digest' };
      return { status: 500, message: 'unscripted' };
    });
    const outcome = await h.instance.tick();
    expect(outcome.kind, outcome.message).toBe('committed');
    const evaluation = h.server.chatRequests.find(isEvaluation)!;
    expect(userOf(evaluation)).toContain('intent: read-only');
    for (const r of h.server.chatRequests.filter(isAgent)) expect(toolNames(r)).not.toContain('fs__write_file');
    expect((await h.world.service.listLog({ taskId: task.id }))[0]).toMatchObject({ exec_mode: 'analysis' });
  });

  it('rights taken away while a write run goes on: the write it names waits for the person', async () => {
    h = await createTasksHarness();
    const ws = h.store.workspace;
    writeFileSync(path.join(ws, 'inbox.md'), 'the importer shipped\n');
    for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
    const task = await h.world.service.addTask({ title: TITLE, needs_tools: true });
    const service = h.world.service;
    h.server.handle(async (req) => {
      if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'escalate', reason: 'new notes' })) } };
      if (!isAgent(req)) return { status: 500, message: 'unscripted' };
      if (hasToolResult(req)) return { text: 'Done.' };
      // The person makes it read-only while the run is under way; then the run asks for its write.
      await service.updateTask(task.id, { needs_tools: false });
      return { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, 'notes.md'), content: 'digest' } }] };
    });
    const outcome = await h.instance.tick();
    expect(outcome.kind, outcome.message).toBe('committed');
    expect(existsSync(path.join(ws, 'notes.md'))).toBe(false);
    const approvals = await h.store.db.selectFrom('approvals').select(['tool', 'state']).execute();
    expect(approvals.map((a) => a.state)).not.toContain('approved');
    expect(await h.world.service.listEscalations('pending')).toHaveLength(1);
  });
});
