/**
 * A run's tool surface beyond "every MCP tool": an allowlist of servers (a bot's tools), in-process
 * tools under the same modes and approval gate (the memory world's decision agent), and a
 * per-run model role / model (a bot's own model).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineLocalTool, type LocalTool } from '../../src/agent/index.js';
import { createHarness, nextEvent, offeredTools, toolMessages, type Harness } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.dispose();
});

function goalsTools(written: string[]): LocalTool[] {
  return [
    defineLocalTool({
      name: 'goals_list',
      description: 'List the goals.',
      input: z.strictObject({}),
      access: 'read',
      execute: async () => JSON.stringify(written),
    }),
    defineLocalTool({
      name: 'goals_add',
      description: 'Add a goal.',
      input: z.strictObject({ title: z.string().min(1) }),
      access: 'write',
      execute: async ({ title }) => {
        written.push(title);
        return `added "${title}"`;
      },
    }),
  ];
}

describe('agent runner: servers allowlist, local tools, model choice', () => {
  it('offers only the servers a run names; [] offers no MCP tool at all', async () => {
    h.model.enqueue({ text: 'a' }, { text: 'b' });
    await h.runner.start({ world: 'bots', purpose: 'probe', prompt: 'hi', mode: 'full', attended: true, servers: ['fs'] }).settled;
    await h.runner.start({ world: 'bots', purpose: 'probe', prompt: 'hi', mode: 'full', attended: true, servers: [] }).settled;
    expect(offeredTools(h.model, 0)).toContain('fs__read_text_file');
    expect(offeredTools(h.model, 1)).toEqual([]);
  });

  it('runs a read local tool; hides a write one in analysis mode; validates input before execute', async () => {
    const written: string[] = [];
    h.model.enqueue(
      { toolCalls: [{ name: 'goals_list', arguments: {} }] },
      { toolCalls: [{ name: 'goals_add', arguments: { title: 'x' } }] },
      { text: 'done' },
    );
    const outcome = await h.runner.start({
      world: 'memory',
      purpose: 'decide',
      prompt: 'go',
      mode: 'analysis',
      attended: false,
      servers: [],
      localTools: goalsTools(written),
    }).settled;
    expect(offeredTools(h.model, 0)).toEqual(['goals_list']);
    expect(toolMessages(h.model, 1)[0]).toContain('[]');
    expect(written).toEqual([]);
    expect(outcome.toolSteps.map((s) => [s.tool, s.outcome])).toEqual([
      ['goals_list', 'ok'],
      ['goals_add', 'error'],
    ]);

    h.model.enqueue({ toolCalls: [{ name: 'goals_add', arguments: { title: '' } }] }, { text: 'ok' });
    const bad = await h.runner.start({
      world: 'memory',
      purpose: 'decide',
      prompt: 'go',
      mode: 'full',
      attended: false,
      servers: [],
      localTools: goalsTools(written),
    }).settled;
    expect(bad.toolSteps[0]).toMatchObject({ tool: 'goals_add', outcome: 'error' });
    expect(bad.toolSteps[0]!.output).toMatch(/Invalid input for goals_add: title/);
    expect(written).toEqual([]);
  });

  it('a write local tool in a tainted run waits for an approval (server "local") and runs once approved', async () => {
    const written: string[] = [];
    h.model.enqueue({ toolCalls: [{ name: 'goals_add', arguments: { title: 'Ship it' } }] }, { text: 'added' });
    const run = h.runner.start({
      world: 'memory',
      purpose: 'decide',
      prompt: 'go',
      mode: 'tainted',
      attended: true,
      servers: [],
      localTools: goalsTools(written),
    });
    const asked = await nextEvent(run, 'approval-requested');
    expect(asked.approval).toMatchObject({ server: 'local', tool: 'goals_add', state: 'pending' });
    expect(written).toEqual([]);
    await h.approvals.approve(asked.approval.id);
    const outcome = await run.settled;
    expect(outcome.status).toBe('done');
    expect(written).toEqual(['Ship it']);
  });

  it('runs on the role and model it names; refuses a misnamed local tool', async () => {
    h.model.enqueue({ text: 'hello from the bot model' });
    const outcome = await h.runner.start({
      world: 'bots',
      purpose: 'reply',
      prompt: 'hi',
      mode: 'full',
      attended: true,
      role: 'local',
      model: 'bot-model',
      servers: [],
    }).settled;
    expect(outcome.text).toBe('hello from the bot model');
    expect(h.model.chatRequests[0]!.body!.model).toBe('bot-model');
    const bad = { ...goalsTools([])[0]!, name: 'Bad Name' };
    expect(() => h.runner.start({ world: 'x', purpose: 'y', prompt: 'z', mode: 'full', attended: true, localTools: [bad] })).toThrow(
      /localTools: local tool name "Bad Name"/,
    );
  });
});
