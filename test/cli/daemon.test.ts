/**
 * The real CLI as a person uses it: `start` prints the page URL with the token and serves,
 * SIGTERM stops cleanly, `tick` and `status` work without a daemon, bad config stops the start
 * with the key and the reason.
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon } from '../support/daemon.js';
import { runCli } from '../support/cli.js';
import { startModelServer, unreachableBaseUrl, type ModelServer } from '../support/model-server.js';

let models: ModelServer;

beforeAll(async () => {
  models = await startModelServer();
});
afterAll(async () => {
  await models.close();
});

const modelEnv = () => ({
  SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
  SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
  SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
  SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
});

const cli = runCli;

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe('subconscious start', () => {
  it('prints the page URL with the token, serves it, answers status, and stops cleanly on SIGTERM', async () => {
    const daemon = await startDaemon({ env: modelEnv() });
    try {
      expect(daemon.output()).toMatch(/open http:\/\/127\.0\.0\.1:\d+\/\?token=/);
      await waitFor(() => daemon.output().includes('agent model:'), 'the model lines');
      expect(daemon.output()).toMatch(/local model: scripted-model at .* — reachable/);
      expect(statSync(path.join(daemon.workspace, '.subconscious', 'token')).mode & 0o777).toBe(0o600);
      expect(statSync(path.join(daemon.workspace, '.subconscious', 'subconscious.db')).isFile()).toBe(true);
      const page = await fetch(`${daemon.url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);
      expect((await fetch(`${daemon.url}/rpc`, { method: 'POST', body: '{}' })).status).toBe(401);
      const status = await daemon.rpc<{ instances: { world: string }[] }>('subconscious.status');
      expect(status.instances.map((i) => i.world)).toContain('tasks');
      expect(await daemon.stop()).toBe(0);
      expect(daemon.output()).toMatch(/SIGTERM: stopping/);
    } finally {
      await daemon.dispose();
    }
  });

  it('with the model absent and a legacy [heartbeat] section: says each once — the rename, what is down and how to fix it — and keeps running', async () => {
    const nowhere = await unreachableBaseUrl();
    const daemon = await startDaemon({
      env: { ...modelEnv(), SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere },
      config: '[heartbeat]\ninterval_minutes = 30\n',
    });
    try {
      await waitFor(() => daemon.output().includes('agent model:'), 'the model lines');
      const out = daemon.output();
      expect(out.split('[heartbeat] in subconscious.toml is read as [worlds.tasks]')).toHaveLength(2);
      const local = out.split('\n').find((l) => l.includes('local model:'))!;
      expect(local).toContain(`NOT AVAILABLE: The local endpoint is not answering at ${nowhere}.`);
      expect(local).toContain('Start the model server or set SUBCONSCIOUS_LOCAL_BASE_URL.');
      expect(local.split('SUBCONSCIOUS_LOCAL_BASE_URL')).toHaveLength(2); // the advice once
      expect(out).toContain('The daemon keeps running: work that needs the local model waits and is tried again at each tick');
      const status = await daemon.rpc<{ instances: { world: string }[] }>('subconscious.status');
      expect(status.instances.map((i) => i.world)).toContain('tasks');
    } finally {
      await daemon.dispose();
    }
  });

  it('the banner and /healthz mark the worlds that are off and why, and list the hosts', async () => {
    const daemon = await startDaemon({ env: modelEnv(), config: '[worlds.tasks]\nenabled = false\n' });
    try {
      await waitFor(() => daemon.output().includes('agent model:'), 'the model lines');
      const worlds = daemon
        .output()
        .split('\n')
        .find((l) => l.includes('worlds:'))!;
      expect(worlds).toContain('tasks (off: subconscious.toml)');
      expect(worlds).toMatch(/memory(,|$)/);
      expect(daemon.output()).toMatch(/hosts: +bots, runtimes, orchestration/);
      await daemon.rpc('subconscious.set_enabled', { world: 'memory', enabled: false });
      const auth = { authorization: `Bearer ${daemon.token}` };
      const health = (await (await fetch(`${daemon.url}/healthz`, { headers: auth })).json()) as Record<string, unknown>;
      expect(health).toMatchObject({
        ok: true,
        off: { tasks: 'subconscious.toml', memory: 'switched off on the page' },
        hosts: ['bots', 'runtimes', 'orchestration'],
      });
      expect(health.worlds).toContain('tasks');
    } finally {
      await daemon.dispose();
    }
  });

  it('refuses to start on invalid config, naming the key and the reason', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-badcfg-'));
    try {
      writeFileSync(path.join(workspace, 'subconscious.toml'), '[heartbeat]\ninterval_minutes = 1\n');
      const res = await cli(['start', '--port', '0'], workspace);
      expect(res.code).toBe(78);
      expect(res.err).toMatch(/heartbeat\.interval_minutes: must be at least 5/);
      expect(res.err).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});

describe('one-shot commands next to a running daemon', () => {
  it('`tasks add` goes through the daemon (its page sees the change live); without a daemon it opens the store', async () => {
    models.reset();
    models.handle(() => ({ json: { decisions: [] } }));
    const daemon = await startDaemon({ env: modelEnv() });
    try {
      const controller = new AbortController();
      const events = await fetch(`${daemon.url}/events?token=${daemon.token}`, { signal: controller.signal });
      const reader = events.body!.getReader();
      let seen = '';
      const sawChange = (async () => {
        while (!seen.includes('tasks.changed')) {
          const { value, done } = await reader.read();
          if (done) break;
          seen += new TextDecoder().decode(value);
        }
      })();
      const added = await cli(['tasks', 'add', 'Check the build status', '--json'], daemon.workspace, modelEnv());
      expect(added.code, added.err).toBe(0);
      await sawChange;
      controller.abort();
      expect(seen).toContain('tasks.changed');
      expect(existsSync(path.join(daemon.workspace, '.subconscious', 'daemon.json'))).toBe(true);
      expect(await daemon.stop()).toBe(0);
      expect(existsSync(path.join(daemon.workspace, '.subconscious', 'daemon.json'))).toBe(false);
      const listed = await cli(['tasks', 'list', '--json'], daemon.workspace, modelEnv());
      expect(listed.code, listed.err).toBe(0);
      expect(JSON.parse(listed.out)).toEqual(expect.arrayContaining([expect.objectContaining({ title: 'Check the build status' })]));
    } finally {
      models.handle(undefined);
      await daemon.dispose();
    }
  });
});

describe('SIGTERM during a tick', () => {
  it('stops at a checkpoint: nothing half-written, and the next start resumes the same tick', async () => {
    let hold = true;
    let evaluations = 0;
    models.reset();
    models.handle(async (req) => {
      const prompt = JSON.stringify(req.body?.messages ?? []);
      evaluations++;
      if (hold) await new Promise(() => undefined); // the first evaluation never answers
      const ids = [...new Set([...prompt.matchAll(/system:[a-z-]+/g)].map((m) => m[0]))];
      return { json: { decisions: ids.map((task_id) => ({ task_id, decision: 'noop', reason: 'nothing new' })) } };
    });
    const daemon = await startDaemon({ env: modelEnv() });
    try {
      await waitFor(() => evaluations === 1, 'the first evaluation');
      const during = await daemon.rpc<{ decision: string; id: string }[]>('subconscious.log_list');
      expect(during).toHaveLength(3);
      expect(during.every((r) => r.decision === 'in_progress')).toBe(true);
      expect(await daemon.stop()).toBe(0);
      hold = false;
      await daemon.restart();
      await waitFor(() => evaluations === 2, 'the resumed evaluation');
      let rows: { decision: string; id: string }[] = [];
      for (let i = 0; i < 200; i++) {
        rows = await daemon.rpc('subconscious.log_list');
        if (rows.length === 3 && rows.every((r) => r.decision === 'noop')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(rows.map((r) => r.decision)).toEqual(['noop', 'noop', 'noop']);
      // Same rows, updated in place: the resumed tick reused the tick's in_progress rows.
      expect(rows.map((r) => r.id).sort()).toEqual(during.map((r) => r.id).sort());
      const status = await daemon.rpc<{ instances: { world: string; total_ticks: number; consecutive_failures: number }[] }>('subconscious.status');
      expect(status.instances.find((i) => i.world === 'tasks')).toMatchObject({ total_ticks: 1, consecutive_failures: 0 });
    } finally {
      models.handle(undefined);
      await daemon.dispose();
    }
  });
});

describe('one-shot commands', () => {
  it('`tick` runs one tick and prints a line per world; `status` reads the store', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-tick-'));
    try {
      models.reset();
      models.handle((req) => {
        const prompt = JSON.stringify(req.body?.messages ?? []);
        const ids = [...prompt.matchAll(/system:[a-z-]+/g)].map((m) => m[0]);
        return { json: { decisions: [...new Set(ids)].map((task_id) => ({ task_id, decision: 'noop', reason: 'nothing new' })) } };
      });
      const tick = await cli(['tick'], workspace, modelEnv());
      expect(tick.err).toBe('');
      expect(tick.code).toBe(0);
      expect(tick.out).toMatch(/^tasks: committed — /m);
      // No memory source: the memory world makes its baseline and the conscious loop has nothing to read (no call).
      expect(tick.out).toMatch(/^memory: quiet — baseline created \(/m);
      expect(tick.out).toMatch(/^conscious: quiet — memory unchanged: nothing to read \(/m);
      // No harness history: the steering world has nothing to review (no call).
      expect(tick.out).toMatch(/^steering: quiet — no unreviewed harness history/m);
      // No bot: the heartbeat has nothing to check (no call).
      expect(tick.out).toMatch(/^heartbeat: quiet — no bot due/m);
      const status = await cli(['status', '--json'], workspace, modelEnv());
      const parsed = JSON.parse(status.out) as { instances: { world: string; total_ticks: number; consecutive_failures: number }[] };
      expect(parsed.instances).toEqual(
        ['memory', 'tasks', 'conscious', 'heartbeat', 'steering'].map((world) => expect.objectContaining({ world, total_ticks: 1, consecutive_failures: 0 })),
      );
      // How each model role takes structured output (issue 19): the scripted server accepts the schema.
      expect((JSON.parse(status.out) as { structured_output: unknown[] }).structured_output).toEqual(
        ['local', 'agent'].map((role) => expect.objectContaining({ role, configured: 'auto', in_use: 'json_schema', learned: null })),
      );
      const human = await cli(['status'], workspace, modelEnv());
      expect(human.out).toMatch(/^tasks: enabled — every 5 min, 1 ticks/m);
      expect(human.out).toMatch(/^model local \(scripted-model\): structured output auto, using json_schema$/m);
    } finally {
      models.handle(undefined);
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  it('`tick` with the model down says so in one line and exits 0 (skipped, not crashed)', async () => {
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-down-'));
    try {
      const res = await cli(['tick'], workspace, {
        SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1',
        SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
      });
      expect(res.code).toBe(0);
      expect(res.out).toMatch(/tasks: skipped — the local model is unavailable/);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});
