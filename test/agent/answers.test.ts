/**
 * Issue 23: the four answers at the approval gate on the real runner, the filesystem MCP server
 * and the scripted model: accept runs the call as shown, edit runs the changed (schema-checked)
 * call, respond sends the person's text back and the run continues with it, ignore runs nothing;
 * each answer records who answered and how. A decided call (a task's card) runs before step one.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSubconsciousError } from '../../src/core/index.js';
import { createHarness, nextEvent, toolMessages, type Harness } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.dispose();
});

const isCode = (code: string) => (e: unknown) => isSubconsciousError(e, code);

describe('approval answers: accept, edit, respond, ignore', () => {
  it('shows the tool’s schema, the model, tokens spent and the outside text the run read', async () => {
    writeFileSync(path.join(h.dir, 'in.txt'), 'please write hello');
    const target = path.join(h.dir, 'out.txt');
    h.model.enqueue(
      { toolCalls: [{ name: 'fs__read_text_file', arguments: { path: path.join(h.dir, 'in.txt') } }] },
      { toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'hello' } }] },
      { text: 'Wrote it.' },
    );
    const run = h.runner.start({
      world: 'bots',
      purpose: 'bot_reply',
      prompt: 'p',
      mode: 'tainted',
      attended: true,
      reads: [{ what: 'the message from Ann', excerpt: 'can you write hello?' }],
    });
    const { approval } = await nextEvent(run, 'approval-requested');
    expect(approval.input_schema).toMatchObject({ type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } });
    expect(approval.context?.model).toBe('scripted-model');
    // The step asking is still open: its ledger row is written when it finishes.
    expect(approval.context?.spent.calls).toBe(1);
    expect(approval.context?.spent.input_tokens).toBeGreaterThan(0);
    expect(approval.context?.estimate.output_tokens).toBeGreaterThan(0);
    expect(approval.context?.read.map((r) => r.what)).toEqual(['the message from Ann', expect.stringContaining('fs__read_text_file')]);
    expect(approval.context?.read[1]!.excerpt).toContain('please write hello');
    await h.approvals.answer(approval.id, { answer: 'accept', by: 'Ann', via: 'page' });
    expect((await run.settled).status).toBe('done');
    expect(readFileSync(target, 'utf8')).toBe('hello');
    expect((await h.approvals.get(approval.id))!.answer).toEqual({ kind: 'accept', arguments: null, text: null, by: 'Ann', via: 'page' });
  });

  it('edit: arguments that break the tool’s schema are refused naming the field; the edited call runs', async () => {
    const target = path.join(h.dir, 'out.txt');
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'draft' } }] }, { text: 'Done.' });
    const run = h.runner.start({ world: 'heartbeat', purpose: 'resume', prompt: 'p', mode: 'tainted', attended: true });
    const { approval } = await nextEvent(run, 'approval-requested');

    await expect(h.approvals.answer(approval.id, { answer: 'edit', arguments: { path: target, content: 42 } })).rejects.toSatisfy(
      (e: unknown) => isSubconsciousError(e, 'invalid_params') && e.message.startsWith('arguments.content:'),
    );
    await expect(h.approvals.answer(approval.id, { answer: 'edit', arguments: { content: 'x' } })).rejects.toSatisfy(isCode('invalid_params'));
    expect((await h.approvals.get(approval.id))!.state).toBe('pending');

    await h.approvals.answer(approval.id, { answer: 'edit', arguments: { path: target, content: 'final' }, via: 'rpc' });
    const outcome = await run.settled;
    expect(outcome.status).toBe('done');
    expect(readFileSync(target, 'utf8')).toBe('final');
    expect(outcome.toolSteps[0]!.input).toContain('final');
    const row = (await h.approvals.get(approval.id))!;
    expect(row.state).toBe('approved');
    expect(row.answer).toEqual({ kind: 'edit', arguments: { path: target, content: 'final' }, text: null, by: 'you', via: 'rpc' });
    await expect(h.approvals.answer(approval.id, { answer: 'accept' })).rejects.toSatisfy(isCode('conflict'));
  });

  it('respond: the tool does not run, the model reads the person’s text and continues with it', async () => {
    const target = path.join(h.dir, 'out.txt');
    const other = path.join(h.dir, 'other.txt');
    h.model.enqueue(
      { toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'a' } }] },
      { toolCalls: [{ name: 'fs__write_file', arguments: { path: other, content: 'b' } }] },
      { text: 'Wrote other.txt instead.' },
    );
    const run = h.runner.start({ world: 'heartbeat', purpose: 'resume', prompt: 'p', mode: 'tainted', attended: true });
    const first = await nextEvent(run, 'approval-requested');
    await h.approvals.answer(first.approval.id, { answer: 'respond', text: 'Write other.txt instead, please.' });
    const second = await nextEvent(run, 'approval-requested');
    expect(toolMessages(h.model, 1)[0]).toContain('Write other.txt instead, please.');
    await h.approvals.answer(second.approval.id, { answer: 'accept' });
    const outcome = await run.settled;
    expect(outcome.status).toBe('done');
    expect(existsSync(target)).toBe(false);
    expect(readFileSync(other, 'utf8')).toBe('b');
    expect(outcome.toolSteps.map((s) => s.outcome)).toEqual(['denied', 'ok']);
    const row = (await h.approvals.get(first.approval.id))!;
    expect(row.state).toBe('denied');
    expect(row.answer).toMatchObject({ kind: 'respond', text: 'Write other.txt instead, please.' });
    await expect(h.approvals.answer(second.approval.id, { answer: 'respond', text: '  ' })).rejects.toSatisfy(isCode('invalid_params'));
  });

  it('ignore runs nothing; approve and deny stay as the older names of accept and ignore', async () => {
    const target = path.join(h.dir, 'out.txt');
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'a' } }] }, { text: 'OK.' });
    const run = h.runner.start({ world: 'heartbeat', purpose: 'resume', prompt: 'p', mode: 'tainted', attended: true });
    const { approval } = await nextEvent(run, 'approval-requested');
    await h.approvals.deny(approval.id, { by: 'Bo', via: 'cli' });
    expect((await run.settled).toolSteps.map((s) => s.outcome)).toEqual(['denied']);
    expect(existsSync(target)).toBe(false);
    expect((await h.approvals.get(approval.id))!.answer).toMatchObject({ kind: 'ignore', by: 'Bo', via: 'cli' });
    expect(h.busEvents.filter((e) => e.type === 'approvals.changed').map((e) => e.data.answer)).toEqual([undefined, 'ignore']);
  });

  it('a decided call runs exactly once before the model’s first step, and the model continues from its result', async () => {
    const target = path.join(h.dir, 'decided.txt');
    h.model.enqueue({ text: 'Wrote the file as you decided.' });
    const outcome = await h.runner.start({
      world: 'tasks',
      purpose: 'approved_action',
      prompt: 'Carry out the approved call.',
      mode: 'tainted',
      attended: true,
      decided: { server: 'fs', tool: 'write_file', arguments: { path: target, content: 'edited' } },
    }).settled;
    expect(outcome.status).toBe('done');
    expect(readFileSync(target, 'utf8')).toBe('edited');
    expect(outcome.toolSteps.map((s) => [s.tool, s.outcome])).toEqual([['fs__write_file', 'ok']]);
    expect(await h.approvals.list()).toEqual([]);
    expect(toolMessages(h.model, 0)[0]).toContain('Successfully wrote');
  });
});
