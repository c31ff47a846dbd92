/**
 * What the scripted model server answers the bots of the page tests, and a pacing proxy in
 * front of it so a reply streams the way a real model's does — piece by piece, slowly enough
 * to watch — and can be held mid-stream until the test says.
 *
 * `scriptBots(server)` recognises a bot's run by its persona (`You are <label> (@<name>)`) and
 * answers from that bot's queue; a call it has no answer for gets a 400 naming the bot, so a
 * test never passes on an answer it did not script.
 *
 * `startPacedProxy(server)` forwards every request to the scripted server and re-sends a
 * streamed answer one SSE event at a time, `paceMs` apart; `hold(after)` stops the next
 * streamed answer after `after` text pieces until `release()` (a client that gives up — a
 * stopped run — ends it).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ChatMessage, ModelServer, RecordedRequest, ScriptedReply } from '../../support/model-server.js';

function contentText(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => (typeof p === 'object' && p && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

export interface BotCall {
  bot: string;
  /** The last user turn of the request. */
  lastUser: string;
  /** The request ends with a tool result (the second step of a tool call). */
  afterTool: boolean;
  /** Names of the tools offered. */
  tools: string[];
}

export interface BotModels {
  /** Queue answers for a bot's next model calls (FIFO). */
  answer(bot: string, ...replies: ScriptedReply[]): void;
  /** Every bot call seen, in order. */
  readonly calls: BotCall[];
}

export function scriptBots(server: ModelServer): BotModels {
  const queues = new Map<string, ScriptedReply[]>();
  const calls: BotCall[] = [];
  server.handle((req: RecordedRequest): ScriptedReply => {
    const messages = req.body?.messages ?? [];
    const system = messages
      .filter((m) => m.role === 'system')
      .map(contentText)
      .join('\n');
    const who = /^You are .* \(@([a-z][a-z0-9_-]*)\), one of the user's AI teammates/.exec(system);
    if (!who) return { status: 400, message: `bots page test: not a bot's call (system prompt: ${system.slice(0, 80)})` };
    const bot = who[1]!;
    const users = messages.filter((m) => m.role === 'user');
    calls.push({
      bot,
      lastUser: users.length ? contentText(users[users.length - 1]!) : '',
      afterTool: messages.at(-1)?.role === 'tool',
      tools: (req.body?.tools ?? []).map((t) => t.function.name),
    });
    const reply = queues.get(bot)?.shift();
    return reply ?? { status: 400, message: `bots page test: no answer scripted for @${bot}` };
  });
  return {
    answer: (bot, ...replies) => queues.set(bot, [...(queues.get(bot) ?? []), ...replies]),
    get calls() {
      return calls;
    },
  };
}

export interface PacedProxy {
  /** The base URL to give the daemon (`…/v1`). */
  baseUrl: string;
  /** Hold the next streamed answer after `after` text pieces; `reached` resolves when it is held. */
  hold(after: number): { reached: Promise<void>; release(): void };
  close(): Promise<void>;
}

export async function startPacedProxy(target: ModelServer, opts: { paceMs?: number } = {}): Promise<PacedProxy> {
  const paceMs = opts.paceMs ?? 120;
  const sockets = new Set<Socket>();
  const releases = new Set<() => void>();
  let armed: { after: number; reached: () => void; gate: Promise<void> } | null = null;
  const upstream = new URL(target.baseUrl);

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = { ...req.headers, host: upstream.host };
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (answer) => {
        const streamed = String(answer.headers['content-type'] ?? '').startsWith('text/event-stream');
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!streamed) return void answer.pipe(res);
        const hold = armed;
        armed = null;
        void pace(answer, res, hold);
      });
      forward.on('error', () => res.destroy());
      // A client that gives up (a stopped run) ends the upstream call too.
      res.on('close', () => forward.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function pace(answer: http.IncomingMessage, res: http.ServerResponse, hold: typeof armed): Promise<void> {
    let buffer = '';
    let pieces = 0;
    const events: string[] = [];
    let ended = false;
    let wake: (() => void) | null = null;
    answer.on('data', (c: Buffer) => {
      buffer += c.toString('utf8');
      for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
        events.push(buffer.slice(0, i + 2));
        buffer = buffer.slice(i + 2);
      }
      wake?.();
    });
    answer.on('end', () => {
      ended = true;
      wake?.();
    });
    for (;;) {
      if (res.destroyed) return;
      const event = events.shift();
      if (event === undefined) {
        if (ended) return void res.end();
        await new Promise<void>((r) => (wake = r));
        wake = null;
        continue;
      }
      res.write(event);
      if (/"content":"[^"]/.test(event)) {
        pieces++;
        if (hold && pieces === hold.after) {
          hold.reached();
          await hold.gate;
        }
      }
      await new Promise((r) => setTimeout(r, paceMs));
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    hold(after) {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((r) => (reached = r));
      const gate = new Promise<void>((r) => (release = r));
      releases.add(release);
      armed = { after, reached, gate };
      return { reached: reachedP, release };
    },
    async close() {
      for (const r of releases) r();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
