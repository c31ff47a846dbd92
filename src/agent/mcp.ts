/**
 * Tool servers over MCP (the "skills"). Each `[[mcp.servers]]` entry is started once (stdio) or
 * connected once (streamable HTTP) and reused. A server that dies (its transport closes) is
 * marked `disconnected` and restarted on its next use; a server that fails to start is retried
 * with exponential backoff (1 s, 2 s, 4 s … 60 s on the injected clock) instead of on every call.
 *
 * A tool is `read` when its MCP annotations say `readOnlyHint: true` (and not also `destructiveHint:
 * true`); otherwise (`readOnlyHint: false` or no hint at all) it is `write`. A per-tool config
 * override wins; an override naming a tool the server does not offer is logged (a typo).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { SubconsciousError, describeError, silentLogger, untilAborted, type Clock, type Emitter, type Logger } from '../core/index.js';
import type { AgentEvents, McpServerHealth, McpServerStatus } from '../protocol/agent.js';
import type { ToolAccess } from './permissions.js';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

export const mcpToolOverrideSchema = z
  .object({
    access: z.enum(['read', 'write']).optional(),
    allow_automatically: z.boolean().optional(),
  })
  .strict();

/** One `[[mcp.servers]]` entry of `subconscious.toml`. */
export const mcpServerSchema = z
  .object({
    name: z.string().regex(NAME_RE, 'letters, digits, "_" and "-", at most 32, starting with a letter or digit'),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    url: z.url().optional(),
    tools: z.record(z.string(), mcpToolOverrideSchema).default({}),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (!s.command === !s.url) {
      ctx.addIssue({ code: 'custom', path: [s.command ? 'url' : 'command'], message: 'set exactly one of `command` (stdio) or `url` (streamable HTTP)' });
    }
    if (s.url && (s.args.length || Object.keys(s.env).length || s.cwd)) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: '`args`, `env` and `cwd` only apply to a stdio server (`command`)' });
    }
  });

export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type McpServerInput = z.input<typeof mcpServerSchema>;

export const mcpServersSchema = z.array(mcpServerSchema).superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((s, i) => {
    if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate MCP server name "${s.name}"` });
    seen.add(s.name);
  });
});

export type { McpServerHealth, McpServerStatus };

export interface McpToolInfo {
  server: string;
  /** The tool's name on its server. */
  name: string;
  /** The name the model sees: `<server>__<tool>` (unique across servers). */
  exposedName: string;
  description: string;
  inputSchema: Tool['inputSchema'];
  access: ToolAccess;
  allowAutomatically: boolean;
}

export interface McpCallResult {
  /** The text content blocks joined (other blocks summarised). */
  text: string;
  /** The tool reported an error (MCP `isError`), or the server rejected the call. */
  isError: boolean;
  structured?: unknown;
}

export interface McpManagerOptions {
  servers: readonly McpServerInput[];
  clock: Clock;
  log?: Logger | undefined;
  /** Told `mcp.changed` ({server, status, error?, restarts, tools}) whenever a server's status or tools change (the Skills page). */
  events?: Emitter<AgentEvents> | undefined;
  /** Per-call timeout (real time; progress notifications reset it). Default 5 minutes. */
  callTimeoutMs?: number | undefined;
  /** Start/connect timeout (real time). Default 30 s. */
  connectTimeoutMs?: number | undefined;
}

export const RESTART_BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 32000, 60000] as const;

interface Entry {
  config: McpServerConfig;
  status: McpServerStatus;
  client?: Client | undefined;
  transport?: Transport | undefined;
  connecting?: Promise<Client> | undefined;
  /** The client of a start in progress (so close() can stop a server that is still starting). */
  startingClient?: Client | undefined;
  tools: McpToolInfo[];
  error?: string | undefined;
  lastCheckedAt: number | null;
  /** Consecutive failed starts (drives the backoff). */
  failures: number;
  retryAt: number;
  restarts: number;
  /** A start was attempted before (a later one is a restart). */
  started: boolean;
  /** Bumped on each connect, so a stale transport's close is ignored. */
  generation: number;
  stderrTail: string;
}

export class McpManager {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly events: Emitter<AgentEvents> | undefined;
  private readonly callTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private closed = false;

  constructor(opts: McpManagerOptions) {
    const parsed = mcpServersSchema.safeParse(opts.servers);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new SubconsciousError('config_invalid', `mcp.servers.${issue.path.join('.')}: ${issue.message}`, {
        hint: 'Fix the [[mcp.servers]] entry in subconscious.toml.',
      });
    }
    this.clock = opts.clock;
    this.log = opts.log ?? silentLogger;
    this.events = opts.events;
    this.callTimeoutMs = opts.callTimeoutMs ?? 5 * 60_000;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 30_000;
    for (const config of parsed.data) {
      this.entries.set(config.name, {
        config,
        status: 'disconnected',
        tools: [],
        lastCheckedAt: null,
        failures: 0,
        retryAt: 0,
        restarts: 0,
        started: false,
        generation: 0,
        stderrTail: '',
      });
    }
  }

  /** True once `close()` ran (shutting down): a failing call then means "stopped", not "broken". */
  get isClosed(): boolean {
    return this.closed;
  }

  get serverNames(): string[] {
    return [...this.entries.keys()];
  }

  /** A snapshot; no I/O (status reads never wait on a server). */
  health(): McpServerHealth[] {
    return [...this.entries.values()].map((e) => ({
      name: e.config.name,
      status: e.status,
      tools: e.tools.map((t) => t.name),
      ...(e.error ? { error: e.error } : {}),
      last_checked_at: e.lastCheckedAt,
      restarts: e.restarts,
      pid: e.status === 'connected' && e.transport instanceof StdioClientTransport ? e.transport.pid : null,
    }));
  }

  /** Ping every connected server and start the others (respecting backoff), then report health. */
  async check(): Promise<McpServerHealth[]> {
    await Promise.all(
      [...this.entries.values()].map(async (e) => {
        try {
          const client = await this.ensure(e);
          await client.ping({ timeout: this.connectTimeoutMs });
          e.lastCheckedAt = this.clock.now();
        } catch (err) {
          if (e.status === 'connected') this.markFailed(e, `ping failed: ${describeError(err)}`);
        }
      }),
    );
    return this.health();
  }

  /**
   * Every tool of every server that can be reached. A server that cannot start is left out
   * (its health says why) so one broken skill does not stop a run.
   */
  async listTools(): Promise<McpToolInfo[]> {
    const lists = await Promise.all(
      [...this.entries.values()].map(async (e) => {
        try {
          await this.ensure(e);
          return e.tools;
        } catch (err) {
          this.log.warn({ server: e.config.name, err: describeError(err) }, 'MCP server unavailable; its tools are left out');
          return [];
        }
      }),
    );
    // Two tools may map to one model-facing name (`a.b` and `a_b`, or past 64 characters): keep
    // the first and say so, so the model never sees one name for two tools.
    const seen = new Map<string, McpToolInfo>();
    for (const tool of lists.flat()) {
      const first = seen.get(tool.exposedName);
      if (!first) seen.set(tool.exposedName, tool);
      else
        this.log.warn(
          { exposed: tool.exposedName, kept: `${first.server}/${first.name}`, dropped: `${tool.server}/${tool.name}` },
          'two MCP tools share one name; the second is left out',
        );
    }
    return [...seen.values()];
  }

  /**
   * Call one tool. A server that stopped during the call rejects with `mcp_unavailable` (it is
   * restarted on its next use); an aborted `signal` rejects with `cancelled` and tells the server.
   * A tool-level failure is a result with `isError: true`, not an exception.
   */
  async callTool(server: string, name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallResult> {
    const e = this.entries.get(server);
    if (!e) throw new SubconsciousError('not_found', `No MCP server named "${server}".`, { hint: `Configured: ${this.serverNames.join(', ') || 'none'}.` });
    if (signal?.aborted) throw cancelled(server, name);
    // A server may take long to start: a cancelled call must not wait for it.
    const client = await untilAborted(this.ensure(e), signal, () => cancelled(server, name));
    const generation = e.generation;
    // The SDK never removes the abort listener it adds to a request's signal: give it one that
    // lives only as long as this call, so a run's signal does not collect one per tool call.
    const callSignal = signal ? new AbortController() : undefined;
    const forward = () => callSignal?.abort(signal?.reason);
    if (signal?.aborted) throw cancelled(server, name); // aborted while the server started
    signal?.addEventListener('abort', forward, { once: true });
    try {
      const res = await client.callTool({ name, arguments: args }, undefined, {
        ...(callSignal ? { signal: callSignal.signal } : {}),
        timeout: this.callTimeoutMs,
        resetTimeoutOnProgress: true,
      });
      e.lastCheckedAt = this.clock.now();
      return toCallResult(res);
    } catch (err) {
      if (signal?.aborted) throw cancelled(server, name);
      const died = e.generation !== generation || e.status !== 'connected' || isConnectionLoss(err);
      if (died) {
        if (e.generation === generation && e.status === 'connected') this.markFailed(e, `connection closed during ${name}`);
        throw new SubconsciousError('mcp_unavailable', `MCP server "${server}" stopped during ${name}: ${describeError(err)}${this.stderrHint(e)}`, {
          hint: 'It is restarted on its next use; check the server if this repeats.',
          cause: err,
        });
      }
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        return { text: `The tool ${name} timed out after ${Math.round(this.callTimeoutMs / 1000)} s.`, isError: true };
      }
      // The server answered with an error (bad arguments, unknown tool): the model sees it as data.
      return { text: describeError(err), isError: true };
    } finally {
      signal?.removeEventListener('abort', forward);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.entries.values()].map(async (e) => {
        const client = e.client;
        const starting = e.startingClient;
        e.generation++;
        e.client = undefined;
        e.transport = undefined;
        const was = e.status;
        e.status = 'disconnected';
        if (was !== 'disconnected') this.changed(e);
        await Promise.all([client?.close(), starting?.close()].map((p) => p?.catch(() => undefined)));
      }),
    );
  }

  private async ensure(e: Entry): Promise<Client> {
    if (this.closed) throw new SubconsciousError('mcp_unavailable', 'The MCP manager is closed (shutting down).');
    if (e.status === 'connected' && e.client) return e.client;
    if (e.connecting) return e.connecting;
    const now = this.clock.now();
    if (e.failures > 0 && now < e.retryAt) {
      throw new SubconsciousError(
        'mcp_unavailable',
        `MCP server "${e.config.name}" is unavailable (${e.error ?? 'failed to start'}); next retry in ${Math.ceil((e.retryAt - now) / 1000)} s.`,
        { hint: 'Check the server entry in [[mcp.servers]] (command, args, env) or the server itself.' },
      );
    }
    e.connecting = this.connect(e).finally(() => {
      e.connecting = undefined;
      e.startingClient = undefined;
    });
    return e.connecting;
  }

  private async connect(e: Entry): Promise<Client> {
    const generation = ++e.generation;
    const { config } = e;
    e.status = 'starting';
    e.stderrTail = '';
    if (e.started) e.restarts++;
    e.started = true;
    this.changed(e);
    const client = new Client(
      { name: 'subconscious', version: '0.1.0' },
      {
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (!error && tools && e.generation === generation) {
                e.tools = tools.map((t) => toToolInfo(config, t));
                this.changed(e);
              }
            },
          },
        },
      },
    );
    const transport = this.transportFor(e);
    client.onclose = () => {
      if (e.generation !== generation || this.closed) return;
      this.markFailed(e, `the server stopped${this.stderrHint(e)}`);
    };
    client.onerror = (err) => this.log.debug({ server: config.name, err: describeError(err) }, 'MCP transport error');
    e.startingClient = client;
    try {
      await client.connect(transport, { timeout: this.connectTimeoutMs });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.connectTimeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      if (e.generation !== generation) throw new Error('superseded while starting');
      e.client = client;
      e.transport = transport;
      e.tools = tools.map((t) => toToolInfo(config, t));
      const unknown = Object.keys(config.tools).filter((name) => !tools.some((t) => t.name === name));
      if (unknown.length) {
        this.log.warn(
          { server: config.name, tools: unknown, offered: tools.map((t) => t.name) },
          `[[mcp.servers]] "${config.name}": tools.${unknown.join(', tools.')} names no tool of this server; the override does nothing`,
        );
      }
      e.status = 'connected';
      e.error = undefined;
      e.failures = 0;
      e.lastCheckedAt = this.clock.now();
      this.log.info({ server: config.name, tools: e.tools.length }, 'MCP server connected');
      this.changed(e);
      return client;
    } catch (err) {
      if (this.closed) {
        // close() ran while this server was starting: not a start failure, just shutdown.
        await client.close().catch(() => undefined);
        throw new SubconsciousError('mcp_unavailable', 'The MCP manager is closed (shutting down).', { cause: err });
      }
      e.generation++; // the half-started transport's close must not count again
      e.failures++;
      e.retryAt = this.clock.now() + RESTART_BACKOFF_MS[Math.min(e.failures - 1, RESTART_BACKOFF_MS.length - 1)]!;
      e.status = 'error';
      e.error = `could not start: ${describeError(err)}${this.stderrHint(e)}`;
      e.client = undefined;
      e.transport = undefined;
      this.changed(e);
      await client.close().catch(() => undefined);
      throw new SubconsciousError('mcp_unavailable', `MCP server "${config.name}" ${e.error}`, {
        hint: 'Check the server entry in [[mcp.servers]] (command, args, env, url).',
        cause: err,
      });
    }
  }

  private transportFor(e: Entry): Transport {
    const { config } = e;
    if (config.url) return new StreamableHTTPClientTransport(new URL(config.url));
    const transport = new StdioClientTransport({
      command: config.command!,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
    });
    // Keep the tail of stderr for error messages; reading it also keeps the pipe from filling.
    transport.stderr?.on('data', (chunk: Buffer) => {
      e.stderrTail = (e.stderrTail + chunk.toString('utf8')).slice(-2000);
    });
    return transport;
  }

  private markFailed(e: Entry, reason: string): void {
    const client = e.client;
    e.generation++;
    e.client = undefined;
    e.transport = undefined;
    e.status = 'disconnected';
    e.error = reason;
    this.log.warn({ server: e.config.name, reason }, 'MCP server disconnected; it restarts on next use');
    this.changed(e);
    void client?.close().catch(() => undefined);
  }

  private changed(e: Entry): void {
    this.events?.emit('mcp.changed', {
      server: e.config.name,
      status: e.status,
      ...(e.error ? { error: e.error } : {}),
      restarts: e.restarts,
      tools: e.tools.length,
    });
  }

  private stderrHint(e: Entry): string {
    const lines = e.stderrTail.trim().split('\n').filter(Boolean);
    const last = lines.at(-1);
    return last ? ` (stderr: ${last.slice(0, 300)})` : '';
  }
}

function toToolInfo(config: McpServerConfig, tool: Tool): McpToolInfo {
  const override = config.tools[tool.name];
  // Read-only only when the server says so and does not also call it destructive (contradictory hints: be safe).
  const hints = tool.annotations;
  const annotated: ToolAccess = hints?.readOnlyHint === true && hints.destructiveHint !== true ? 'read' : 'write';
  return {
    server: config.name,
    name: tool.name,
    exposedName: exposedToolName(config.name, tool.name),
    description: tool.description ?? tool.title ?? tool.name,
    inputSchema: tool.inputSchema,
    access: override?.access ?? annotated,
    allowAutomatically: override?.allow_automatically ?? false,
  };
}

/** `<server>__<tool>`, cut to the 64 characters OpenAI-compatible APIs accept. */
export function exposedToolName(server: string, tool: string): string {
  return `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

function toCallResult(res: Awaited<ReturnType<Client['callTool']>>): McpCallResult {
  const content = Array.isArray(res.content) ? (res.content as Array<Record<string, unknown>>) : [];
  const parts = content.map((block) => {
    switch (block.type) {
      case 'text':
        return String(block.text ?? '');
      case 'resource': {
        const r = (block.resource ?? {}) as Record<string, unknown>;
        return typeof r.text === 'string' ? r.text : `[resource ${String(r.uri ?? '')}]`;
      }
      case 'resource_link':
        return `[resource ${String(block.uri ?? '')}]`;
      default:
        return `[${String(block.type)} ${String(block.mimeType ?? '')}]`.replace(/ \]$/, ']');
    }
  });
  if (parts.length === 0 && res.structuredContent !== undefined) parts.push(JSON.stringify(res.structuredContent));
  if (parts.length === 0 && 'toolResult' in res) parts.push(JSON.stringify(res.toolResult));
  const out: McpCallResult = { text: parts.join('\n'), isError: res.isError === true };
  if (res.structuredContent !== undefined) out.structured = res.structuredContent;
  return out;
}

/**
 * The request did not reach the server, or its answer was lost: the connection is gone (a stdio
 * child that exited, an HTTP server that is down or forgot our session). Anything else is the
 * server answering with an error, which the model sees as data.
 */
function isConnectionLoss(err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  if (err instanceof StreamableHTTPError) return true;
  if (err instanceof TypeError && /fetch failed/i.test(err.message)) return true; // connection refused / reset
  return err instanceof Error && err.message === 'Not connected';
}

function cancelled(server: string, name: string): SubconsciousError {
  return new SubconsciousError('cancelled', `The call to ${server}/${name} was cancelled.`);
}
