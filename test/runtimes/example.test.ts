/**
 * Example (c), `examples/external-runtime.ts`, run as people run it: against a real daemon (this
 * checkout's `subconscious start`, a child process on a temp workspace) and a model endpoint (the
 * scripted server, spoken to by the AI SDK's openai-compatible provider). The example imports the
 * typed client by the package's name (`subconscious-engine/client`, this checkout's build); the
 * pack test runs the same file from the packed tarball.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { expectExampleRan, scriptAgent } from './example-script.js';

let daemon: TestDaemon | undefined;
let agent: ModelServer | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await agent?.close();
});

it('example (c) runs against a daemon: the AI SDK agent gets its resume by webhook, acknowledges it, reports it done', { timeout: 120_000 }, async () => {
  agent = await startModelServer();
  scriptAgent(agent);
  // The daemon's own models are nowhere (the demo's resume needs no pulse); only the agent has one.
  daemon = await startDaemon({ env: { SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1', SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1' } });
  const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'examples', 'external-runtime.ts')], {
      cwd: ROOT,
      env: { ...process.env, SUBCONSCIOUS_URL: daemon!.url, SUBCONSCIOUS_TOKEN: daemon!.token, AGENT_BASE_URL: agent!.baseUrl, AGENT_MODEL: 'scripted-model' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (c) => resolve({ code: c, out, err }));
  });
  expect(code, `${out}\n${err}\n${daemon.output()}`).toBe(0);
  expectExampleRan(out);
  expect(agent.chatRequests).toHaveLength(2);
  // The wake-up text is what the agent got as its prompt.
  expect(JSON.stringify(agent.chatRequests[0]!.body!.messages)).toContain('[Heartbeat wake-up');
  expect(await daemon.rpc('runtime.list')).toEqual([]); // it unregistered at the end
});
