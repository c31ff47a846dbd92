/**
 * The MCP face against a real daemon, with the official MCP SDK client: over `/mcp` (Streamable
 * HTTP, the token) it lists the person's tools and reads a task added over `/rpc`; resources
 * read and notify a change after the engine's event; the answering tools exist only when the
 * config says so; and `subconscious mcp` (stdio) works through the workspace's daemon. The MCP
 * Inspector's CLI mode (from the registry, `npm exec`) lists the tools and calls one.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { scriptedModelEnv, startModelServer, type ModelServer } from '../support/model-server.js';

let models: ModelServer;
let daemon: TestDaemon;
const env = () => scriptedModelEnv(models);

beforeAll(async () => {
  models = await startModelServer();
  daemon = await startDaemon({ env: env() });
});
afterAll(async () => {
  await daemon?.dispose();
  await models?.close();
});

async function connect(d: TestDaemon, token = d.token): Promise<Client> {
  const client = new Client({ name: 'face-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

const textOf = (result: unknown) => JSON.parse((result as { content: { text: string }[] }).content[0]!.text) as unknown;

describe('/mcp', () => {
  it('refuses a client without the token', async () => {
    await expect(connect(daemon, 'wrong')).rejects.toThrow(/401|unauthorized/i);
    const res = await fetch(`${daemon.url}/mcp`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
  });

  it('lists the tools a person uses and reads a task added over /rpc', async () => {
    const client = await connect(daemon);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of [
        'status',
        'tasks_list',
        'tasks_add',
        'tasks_pause',
        'escalations_list',
        'checkins_list',
        'actionables_list',
        'directives_current',
        'memory_search',
        'bot_send_message',
      ])
        expect(names).toContain(name);
      // Answering acts for the person: off unless the config says so.
      expect(names).not.toContain('escalation_answer');
      expect(names).not.toContain('checkin_answer');

      const task = await daemon.rpc<{ id: string }>('subconscious.tasks_add', { title: 'Check urgent emails over RPC' });
      const listed = textOf(await client.callTool({ name: 'tasks_list', arguments: {} })) as { id: string; title: string }[];
      expect(listed.find((t) => t.id === task.id)?.title).toBe('Check urgent emails over RPC');

      const paused = textOf(await client.callTool({ name: 'tasks_pause', arguments: { id: task.id } })) as { enabled: boolean };
      expect(paused.enabled).toBe(false);
      const bad = (await client.callTool({ name: 'tasks_pause', arguments: { id: 'no-such-task' } })) as { isError?: boolean; content: { text: string }[] };
      expect(bad.isError).toBe(true);
      expect(bad.content[0]!.text).toMatch(/does not exist/);
    } finally {
      await client.close();
    }
  });

  it('reads the resources, and notifies a subscriber when the activity log changes', async () => {
    const client = await connect(daemon);
    try {
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri).sort()).toEqual(['subconscious://actionables', 'subconscious://directives', 'subconscious://log']);
      const actionables = await client.readResource({ uri: 'subconscious://actionables' });
      expect(Array.isArray(JSON.parse((actionables.contents[0] as { text: string }).text))).toBe(true);

      const updated = new Promise<string>((resolve) => client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
      await client.subscribeResource({ uri: 'subconscious://log' });
      await daemon.rpc('subconscious.tasks_add', { title: 'Look for invoices due this week' });
      await daemon.rpc('subconscious.trigger', { world: 'tasks' }); // the tick writes its log rows
      expect(await updated).toBe('subconscious://log');
      const log = await client.readResource({ uri: 'subconscious://log' });
      expect(Array.isArray(JSON.parse((log.contents[0] as { text: string }).text))).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('answers over MCP', () => {
  it('with [server] mcp_allow_answers = true the answering tools are offered', async () => {
    const allowed = await startDaemon({ env: env(), config: '[server]\nmcp_allow_answers = true\n' });
    try {
      const client = await connect(allowed);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('escalation_answer');
      expect(names).toContain('checkin_answer');
      const missing = (await client.callTool({ name: 'escalation_answer', arguments: { id: 'nope', approve: false } })) as { isError?: boolean };
      expect(missing.isError).toBe(true);
      await client.close();
    } finally {
      await allowed.dispose();
    }
  });
});

describe('subconscious mcp (stdio)', () => {
  it("lists tools and reads a task through the workspace's daemon", async () => {
    const task = await daemon.rpc<{ id: string }>('subconscious.tasks_add', { title: 'Task for the stdio face' });
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp', '--workspace', daemon.workspace],
        cwd: ROOT,
        env: { ...(process.env as Record<string, string>), SUBCONSCIOUS_LOG_LEVEL: 'silent' },
        stderr: 'pipe',
      }),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('tasks_add');
      const listed = textOf(await client.callTool({ name: 'tasks_list', arguments: {} })) as { id: string }[];
      expect(listed.map((t) => t.id)).toContain(task.id);
    } finally {
      await client.close();
    }
  });
});

describe('the MCP Inspector (CLI mode, from the registry)', () => {
  const INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';
  const inspect = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)(
      'npm',
      [
        'exec',
        '--yes',
        `--package=${INSPECTOR}`,
        '--',
        'mcp-inspector',
        '--cli',
        `${daemon.url}/mcp`,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${daemon.token}`,
        ...args,
      ],
      { cwd: ROOT, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  it('lists the tools over /mcp and reads a task added over /rpc', async () => {
    const task = await daemon.rpc<{ id: string }>('subconscious.tasks_add', { title: 'Task the inspector reads' });
    const { tools } = (await inspect('--method', 'tools/list')) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['status', 'tasks_list', 'tasks_add']));
    const called = await inspect('--method', 'tools/call', '--tool-name', 'tasks_list');
    expect((textOf(called) as { id: string }[]).map((t) => t.id)).toContain(task.id);
  }, 300_000);
});
