/**
 * Issue 10 §2 and §3 on the daemon's side: the log grouped by tick (counts, tokens, duration,
 * quiet groups, repeated failures as one line with a count, filters and search), a row's detail
 * over RPC, the health probe, and a skill-related escalation that resolves by itself when its
 * skill is healthy again (and says so in the log).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { RpcDispatcher } from '../../../src/core/index.js';
import { implement, tasksContract } from '../../../src/protocol/index.js';
import { tasksRpcHandlers, type Escalation, type LogDetail, type LogGroups, type SystemHealth } from '../../../src/worlds/tasks/index.js';
import type { RecordedRequest, ScriptedReply } from '../../support/model-server.js';
import { createTasksHarness, isAgent, isEvaluation, isLocalExecution, tasksInPrompt, type TasksHarness } from './harness.js';

const MEMORY_SERVER = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/server-memory/dist/index.js', import.meta.url));
let h: TasksHarness | undefined;
let scratch: string | undefined;
afterEach(async () => {
  await h?.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  h = scratch = undefined;
});

const rpcOf = (harness: TasksHarness) => new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(harness.world.service)));

describe('tasks world: the log grouped by tick', () => {
  it('one group per tick with its figures; quiet ticks marked; a repeated failure is one line with a count; filters and search', async () => {
    h = await createTasksHarness({ agent: false, settings: { reevaluateUnchangedAfterMinutes: 0 } });
    const rpc = rpcOf(h);
    const build = await h.world.service.addTask({ title: 'Check the build status' });
    const decide = (req: RecordedRequest): ScriptedReply => ({
      json: {
        decisions: tasksInPrompt(req).map((t) => ({
          task_id: t.id,
          decision: t.id === build.id ? 'act' : 'noop',
          reason: t.id === build.id ? 'The nightly build finished.' : 'No release date moved since the last check.',
        })),
      },
      usage: { prompt_tokens: 900, completion_tokens: 100 },
    });
    h.server.handle((req) =>
      isEvaluation(req)
        ? decide(req)
        : isLocalExecution(req)
          ? { text: 'Build is green.', usage: { prompt_tokens: 150, completion_tokens: 50 } }
          : { status: 500, message: 'x' },
    );
    expect((await h.instance.tick()).kind).toBe('committed');
    // Three ticks in a row fail the same way (the evaluation's answer is not the JSON asked for).
    // (A model that is down fails the tick alone, with no task rows: lifecycle.test.ts.)
    h.server.handle(() => ({ text: 'I will not answer in JSON today.' }));
    for (let i = 0; i < 3; i++) {
      await h.clock.advance(5 * 60_000);
      expect((await h.instance.tick()).kind).toBe('failed');
    }
    // Then a tick where nothing happens but "nothing new".
    h.server.handle((req) => ({
      json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'noop', reason: 'No release date moved since the last check.' })) },
    }));
    await h.clock.advance(5 * 60_000);
    expect((await h.instance.tick()).kind).toBe('committed');

    const { groups, next_before } = (await rpc.call('subconscious.log_ticks', {})) as LogGroups;
    expect(next_before).toBeNull();
    expect(groups).toHaveLength(3);
    const [quiet, outage, first] = groups;
    expect(quiet).toMatchObject({ tasks: 4, counts: { noop: 4 }, quiet: true, ticks: 1 });
    expect(quiet!.lines.every((l) => l.entry.reason === 'No release date moved since the last check.')).toBe(true);
    // The outage: 3 ticks × 4 tasks, one line with its count and the tasks it hit.
    expect(outage).toMatchObject({ ticks: 3, tasks: 12, counts: { failed: 12 }, quiet: false });
    expect(outage!.until).toBeGreaterThan(outage!.tick_at);
    expect(outage!.lines).toHaveLength(1);
    expect(outage!.lines[0]).toMatchObject({ count: 12 });
    expect(outage!.lines[0]!.task_titles).toHaveLength(4);
    expect(outage!.lines[0]!.entry.result).toMatch(/malformed|JSON|schema|parse/i);
    // The first tick: its counts, its tokens (evaluation + execution, as the ledger has them), its duration.
    expect(first).toMatchObject({ tasks: 4, counts: { act: 1, noop: 3 }, quiet: false, tokens: 900 + 100 + 150 + 50 });
    expect(first!.duration_ms).not.toBeNull();
    const ledger = await h.store.db.selectFrom('model_calls').select(['input_tokens', 'output_tokens', 'outcome']).where('outcome', '=', 'ok').execute();
    expect(ledger.slice(0, 2).reduce((n, r) => n + Number(r.input_tokens) + Number(r.output_tokens), 0)).toBe(first!.tokens);

    // Filters and search.
    const acted = (await rpc.call('subconscious.log_ticks', { decision: 'act' })) as LogGroups;
    expect(acted.groups.map((g) => g.lines.map((l) => l.entry.task_id))).toEqual([[build.id]]);
    const mine = (await rpc.call('subconscious.log_ticks', { task_id: build.id })) as LogGroups;
    expect(mine.groups.flatMap((g) => g.lines.map((l) => l.entry.task_id)).every((id) => id === build.id)).toBe(true);
    const found = (await rpc.call('subconscious.log_ticks', { q: 'GREEN' })) as LogGroups;
    expect(found.groups.flatMap((g) => g.lines.map((l) => l.entry.result))).toEqual(['Build is green.']);
    expect(((await rpc.call('subconscious.log_ticks', { q: '100%_' })) as LogGroups).groups).toEqual([]);
    // Pages of 2 ticks reach every tick once (a run of failures across a page boundary is two groups).
    const pages: LogGroups[] = [];
    let before: number | undefined;
    do {
      const page = (await rpc.call('subconscious.log_ticks', { limit: 2, ...(before === undefined ? {} : { before }) })) as LogGroups;
      pages.push(page);
      before = page.next_before ?? undefined;
    } while (before !== undefined && pages.length < 10);
    expect(pages.flatMap((p) => p.groups).reduce((n, g) => n + g.ticks, 0)).toBe(5);
    expect(pages.at(-1)!.groups.at(-1)!.counts).toMatchObject({ act: 1 });
    await expect(rpc.call('subconscious.log_ticks', { limit: 0 })).rejects.toThrow(/limit/);
    await expect(rpc.call('subconscious.log_list', { q: 'x'.repeat(201) })).rejects.toThrow(/at most 200/);

    // A row's detail over RPC: the model's reason, the report, the raw answer, the execution's figures.
    const row = first!.lines.find((l) => l.entry.task_id === build.id)!.entry;
    const detail = (await rpc.call('subconscious.log_detail', { id: row.id })) as LogDetail;
    expect(detail.entry).toMatchObject({ decision: 'act', reason: 'The nightly build finished.', result: 'Build is green.' });
    expect(detail.task).toMatchObject({ id: build.id, title: 'Check the build status' });
    expect(detail.report).toContain('## System health');
    expect(detail.evaluation).toMatchObject({ input_tokens: 900, output_tokens: 100, model: 'local-model', tasks_in_call: 4 });
    expect(detail.evaluation!.raw_answer).toContain('The nightly build finished.');
    expect(detail.execution).toMatchObject({
      mode: 'local',
      purpose: 'execute',
      answer: 'Build is green.',
      calls: { model: 'local-model', calls: 1, input_tokens: 150, output_tokens: 50 },
      tool_calls: [],
    });
    const unknown = rpc.call('subconscious.log_detail', { id: 'no-such-row' });
    await expect(unknown).rejects.toMatchObject({ code: 'not_found' });
    await expect(unknown).rejects.toSatisfy((e: Error) => !e.message.includes('no-such-row'));
    await expect(rpc.call('subconscious.log_detail', {})).rejects.toThrow(/id/);
  });
});

describe('tasks world: health and skills', () => {
  it('the probe reports the models and skills; a skill-related card resolves by itself when its skill is healthy again, and the log says so', async () => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'subc-skill-'));
    const flag = path.join(scratch, 'broken');
    const wrapper = path.join(scratch, 'mail-server.mjs');
    writeFileSync(flag, 'x');
    writeFileSync(
      wrapper,
      `import { existsSync } from 'node:fs';\nif (existsSync(${JSON.stringify(flag)})) { console.error('mail login expired'); process.exit(1); }\nawait import(${JSON.stringify(MEMORY_SERVER)});\n`,
    );
    h = await createTasksHarness({ servers: [{ name: 'mail', command: process.execPath, args: [wrapper] }] });
    const rpc = rpcOf(h);
    const task = await h.world.service.addTask({ title: 'Check that the mail connection works' });
    h.server.handle((req) => {
      if (isEvaluation(req))
        return { json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: t.id === task.id ? 'escalate' : 'noop', reason: 'r' })) } };
      if (isAgent(req)) return { text: 'The mail skill cannot start: its login expired.\nRECOMMENDED ACTION: Re-authenticate the mail integration' };
      return { status: 500, message: 'unscripted' };
    });
    const health = (await rpc.call('subconscious.health', { check: true })) as SystemHealth;
    expect(health.models.map((m) => [m.role, m.available])).toEqual([
      ['local', true],
      ['agent', true],
    ]);
    expect(health.models[0]).toMatchObject({ model: 'local-model', needed_for: expect.stringContaining('deciding') });
    expect(health.skills?.find((s) => s.name === 'mail')).toMatchObject({ status: 'error' });
    expect(health.skills?.find((s) => s.name === 'fs')).toMatchObject({ status: 'connected' });

    expect((await h.instance.tick()).kind).toBe('committed');
    const [card] = (await rpc.call('subconscious.escalations_list', { status: 'pending' })) as Escalation[];
    expect(card).toMatchObject({ task_id: task.id, skill_related: true, skill_server: 'mail' });
    expect((await h.world.service.listTasks()).find((t) => t.id === task.id)!.why).toMatchObject({ kind: 'waiting' });

    // Fixed outside (the login renewed): the next probe finds it healthy, and the card resolves by itself.
    rmSync(flag);
    expect(existsSync(flag)).toBe(false);
    await h.clock.advance(120_000); // past the MCP manager's restart backoff
    await h.world.service.health.check();
    const [resolved] = (await rpc.call('subconscious.escalations_list', { status: 'resolved' })) as Escalation[];
    expect(resolved).toMatchObject({ id: card!.id, resolved_by: 'subconscious', resolution: 'the skill “mail” is healthy again' });
    const row = (await h.world.service.listLog({ taskId: task.id }))[0]!;
    expect(row).toMatchObject({ decision: 'resolved', result: 'Resolved by itself: the skill “mail” is healthy again, so nothing waits for your approval.' });
    expect(h.events.some((e) => e.type === 'tasks.escalation_changed' && e.data.status === 'resolved')).toBe(true);
    expect(h.events.some((e) => e.type === 'tasks.health_changed')).toBe(true);
    await expect(rpc.call('subconscious.escalations_approve', { id: card!.id })).rejects.toMatchObject({
      code: 'conflict',
      message: '“Check that the mail connection works” was already resolved by itself; nothing was run.',
    });
    const detail = (await rpc.call('subconscious.log_detail', { id: row.id })) as LogDetail;
    expect(detail.approvals.at(-1)).toMatchObject({ state: 'resolved', by: 'subconscious', note: 'the skill “mail” is healthy again' });
    // Nothing waits any more: the task is due again.
    expect((await h.world.service.listTasks()).find((t) => t.id === task.id)!.why.kind).toBe('due');
  });
});
