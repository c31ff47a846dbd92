/**
 * Issue 23 on the tasks world: a write the task does not name is held as a card that says
 * exactly what will run (tool, server, arguments by the tool's schema, the run's model and what
 * it read); accept runs that call, edit runs it with the person's (checked) arguments, respond
 * sends their words to a run that continues with them, ignore runs nothing; each is recorded.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSubconsciousError } from '../../../src/core/index.js';
import { createTasksHarness, hasToolResult, isAgent, isEvaluation, systemOf, tasksInPrompt, type TasksHarness } from './harness.js';
import type { RecordedRequest } from '../../support/model-server.js';
import { AGENT_APPROVED_SYSTEM } from '../../../src/worlds/tasks/prompts.js';

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

const TITLE = 'Write the weekly digest to notes.md';

/** One write task whose run wants to write `other.md` (a file its words do not name): held. */
async function heldCard(onApproved: (req: RecordedRequest) => unknown = () => ({ text: 'Done.' })) {
  h = await createTasksHarness();
  const ws = h.store.workspace;
  writeFileSync(path.join(ws, 'inbox.md'), 'the importer shipped\n');
  for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
  await h.world.service.addTask({ title: TITLE, needs_tools: true });
  h.server.handle(async (req) => {
    if (isEvaluation(req)) return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'escalate', reason: 'new notes' })) } };
    if (!isAgent(req)) return { status: 500, message: 'unscripted' };
    if (systemOf(req).includes(AGENT_APPROVED_SYSTEM.split('\n')[0]!)) return onApproved(req) as never;
    if (hasToolResult(req)) return { text: 'Held the write for you.' };
    return { toolCalls: [{ name: 'fs__write_file', arguments: { path: path.join(ws, 'other.md'), content: 'draft' } }] };
  });
  const outcome = await h.instance.tick();
  expect(outcome.kind, outcome.message).toBe('committed');
  const [card] = await h.world.service.listEscalations('pending');
  return { card: card!, ws };
}

describe('tasks cards: accept, edit, respond, ignore', () => {
  it('the card holds exactly the call: tool, server, arguments and the tool’s schema, with the run’s model and what it read', async () => {
    const { card, ws } = await heldCard();
    expect(card.action).toEqual({
      tool: 'write_file',
      server: 'fs',
      arguments: { path: path.join(ws, 'other.md'), content: 'draft' },
      input_schema: expect.objectContaining({ type: 'object', properties: expect.objectContaining({ content: expect.anything() }) }),
    });
    expect(card.context?.model).toBeTruthy();
    expect(card.context?.read[0]!.what).toContain('situation report');
    expect(existsSync(path.join(ws, 'other.md'))).toBe(false);
  });

  it('edit: refused when it breaks the schema (the card stays pending); the edited call runs and is recorded', async () => {
    const { card, ws } = await heldCard();
    const service = h!.world.service;
    await expect(service.answer(card.id, { answer: 'edit', arguments: { path: 1 } })).rejects.toSatisfy((e: unknown) =>
      isSubconsciousError(e, 'invalid_params'),
    );
    expect((await service.escalations.get(card.id))!.status).toBe('pending');
    const target = path.join(ws, 'other.md');
    const res = await service.answer(card.id, { answer: 'edit', arguments: { path: target, content: 'edited value' }, wait: true, by: 'Ann', via: 'page' });
    expect(readFileSync(target, 'utf8')).toBe('edited value');
    expect(res.log?.decision).toBe('act');
    const after = (await service.escalations.get(card.id))!;
    expect(after.answer).toEqual({ kind: 'edit', arguments: { path: target, content: 'edited value' }, text: null, by: 'Ann', via: 'page' });
    const detail = await service.logDetail(after.log_id);
    expect(detail.approved_action?.tool_calls.map((c) => [c.tool, c.outcome])).toEqual([['fs__write_file', 'ok']]);
    await expect(service.answer(card.id, { answer: 'accept' })).rejects.toSatisfy((e: unknown) => isSubconsciousError(e, 'conflict'));
  });

  it('accept runs the held call as shown', async () => {
    const { card, ws } = await heldCard();
    await h!.world.service.answer(card.id, { answer: 'accept', wait: true });
    expect(readFileSync(path.join(ws, 'other.md'), 'utf8')).toBe('draft');
  });

  it('respond: the held call does not run; the run reads the person’s words and continues with them', async () => {
    let seen = '';
    const { card, ws } = await heldCard((req) => {
      seen = JSON.stringify(req.body?.messages ?? []);
      return { text: 'Understood: I left other.md alone.' };
    });
    const res = await h!.world.service.answer(card.id, { answer: 'respond', text: 'Do not write other.md; put it in notes.md next week.', wait: true });
    expect(existsSync(path.join(ws, 'other.md'))).toBe(false);
    expect(seen).toContain('Do not write other.md; put it in notes.md next week.');
    expect(res.log?.result).toBe('Understood: I left other.md alone.');
    expect((await h!.world.service.escalations.get(card.id))!.answer).toMatchObject({
      kind: 'respond',
      text: 'Do not write other.md; put it in notes.md next week.',
    });
  });

  it('ignore runs nothing and says who skipped it', async () => {
    const { card, ws } = await heldCard();
    const res = await h!.world.service.answer(card.id, { answer: 'ignore', via: 'cli' });
    expect(res.run_id).toBeNull();
    expect(res.escalation.status).toBe('dismissed');
    expect(res.escalation.answer).toMatchObject({ kind: 'ignore', by: 'you', via: 'cli' });
    expect(existsSync(path.join(ws, 'other.md'))).toBe(false);
  });

  it('an answer over MCP is recorded on the row and its trail says so (who, which door)', async () => {
    const { card } = await heldCard();
    const res = await h!.world.service.answer(card.id, { answer: 'ignore', by: 'Claude Desktop', via: 'mcp' });
    expect(res.escalation.answer).toMatchObject({ kind: 'ignore', by: 'Claude Desktop', via: 'mcp' });
    const detail = await h!.world.service.logDetail(res.escalation.log_id);
    expect(detail.approvals.at(-1)).toMatchObject({ state: 'dismissed', by: 'you', answered_by: 'Claude Desktop', answered_via: 'mcp' });
  });
});
