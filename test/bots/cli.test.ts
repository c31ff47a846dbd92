/**
 * `subconscious bots list|create|send|stop|approve|deny` (issue 11 §7) over an in-process RPC
 * client and the host's events: `send` streams the reply as it is written.
 */
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerBotsCommands, type BotsCall, type EventSubscribe } from '../../src/bots/index.js';
import { isSubconsciousError } from '../../src/core/index.js';
import { createRpcClient } from '../../src/protocol/client.js';
import type { BotsMethods } from '../../src/protocol/bots.js';
import { createBotsHarness, until, type BotsHarness, sharedMcpForFile } from './harness.js';

const mcpHolder = sharedMcpForFile();

describe('bots CLI', () => {
  let h: BotsHarness;
  let call: BotsCall;
  let lines: string[];
  let streamed: string;
  let ended: ((reason: string) => void) | null;
  const subscribe: EventSubscribe = (listener, onEnd) => {
    ended = onEnd;
    return h.listen((e) => listener(e));
  };

  beforeEach(async () => {
    h = await createBotsHarness({ mcp: mcpHolder.value! });
    call = createRpcClient<BotsMethods>((method, params) => h.rpc.call(method, params));
    lines = [];
    streamed = '';
    ended = null;
  });
  afterEach(async () => {
    await h.dispose();
  });

  /** Whether the commands are told a daemon runs the bots (the in-process host stands in for it). */
  let daemon = true;
  async function run(...args: string[]): Promise<void> {
    const program = new Command().exitOverride();
    registerBotsCommands(program, call, { subscribe, print: (l) => lines.push(l), write: (c) => (streamed += c), daemonRunning: async () => daemon });
    await program.parseAsync(['node', 'subconscious', 'bots', ...args]);
  }

  it('create, list, send (streamed), stop', async () => {
    await run('create', 'growth', '--label', 'Growth lead', '--tools', 'fs');
    expect(lines.pop()).toMatch(/^created @growth \(.+\) with tools fs$/);
    await run('list');
    expect(lines.splice(0)).toEqual([
      'NAME     STATUS  QUEUED  ATTENTION  MODEL  TOOLS  LABEL',
      '@growth  idle    0       0          agent  fs     Growth lead',
    ]);

    h.model.enqueue({ text: 'Three experiments run; the best converts at 4%.\nMEMORY: weekly review on Mondays' });
    await run('send', '@growth', 'How', 'are', 'the', 'experiments?');
    expect(streamed).toBe('Three experiments run; the best converts at 4%.\n');
    expect(lines).toEqual([]);
    expect(h.model.chatRequests[0]!.body!.messages!.at(-1)!.content).toBe('How are the experiments?');

    await run('stop', 'growth');
    expect(lines.pop()).toBe('@growth is idle with no unfinished work: nothing to stop.');
  });

  it('send shows an approval the reply waits for; approve answers it and the reply goes on', async () => {
    await run('create', 'clerk', '--tools', 'fs');
    const target = path.join(h.dir, 'cli-approval.txt');
    h.model.enqueue({ toolCalls: [{ name: 'fs__write_file', arguments: { path: target, content: 'x' } }] }, { text: 'Filed.' });
    const sending = run('send', 'clerk', 'file', 'it');
    await until(() => lines.some((l) => l.startsWith('approval needed: write_file on fs')));
    const id = /bots approve (\S+)`/.exec(lines.find((l) => l.startsWith('approval needed'))!)![1]!;
    await run('approve', id);
    expect(lines.pop()).toBe(`approved write_file on fs (${id})`);
    await sending;
    expect(streamed).toBe('Filed.\n');
  });

  it('a failed reply prints its status and sets a failing exit code', async () => {
    await run('create', 'ops');
    h.model.enqueue({ status: 500, message: 'upstream down' });
    await run('send', 'ops', 'hello');
    expect(lines.pop()).toMatch(/^\(error: .*upstream down/);
    expect(process.exitCode).toBe(1);
    process.exitCode = 0;
  });

  it('an unknown bot is a clear not_found naming the bots there are', async () => {
    await run('create', 'ops');
    await expect(run('send', 'nobody', 'hi')).rejects.toSatisfy((e: unknown) => isSubconsciousError(e, 'not_found') && e.explain().includes('Bots: @ops.'));
  });

  it('the event stream ending before the reply finished is an error that says where the reply went', async () => {
    await run('create', 'ops');
    h.model.handle(() => ({ hang: true }));
    const sending = run('send', 'ops', 'hello');
    await until(() => h.model.chatRequests.length === 1);
    ended!('connection reset');
    await expect(sending).rejects.toThrow(/event stream ended before the reply finished: connection reset/);
  });

  it('--no-wait prints the task and returns', async () => {
    await run('create', 'ops');
    h.model.enqueue({ text: 'later' });
    await run('send', 'ops', 'hello', '--no-wait');
    expect(lines.pop()).toMatch(/^sent to @ops: task \S+$/);
  });

  it('--no-wait without a running daemon is refused before anything is sent (the reply would die with the command)', async () => {
    await run('create', 'ops');
    daemon = false;
    try {
      await expect(run('send', 'ops', 'hello', '--no-wait')).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/needs a running daemon/),
      });
    } finally {
      daemon = true;
    }
    expect(await h.db.selectFrom('bots_messages').selectAll().execute()).toEqual([]);
    expect(h.model.chatRequests).toHaveLength(0);
  });
});
