/**
 * `subconscious bots list|create|send|stop|approve|deny`: a bot without the page. Each command is
 * one or two RPC calls (the methods the page uses). `send` streams the reply as it is written: it
 * takes an event subscription (the daemon's `/events`, or this process's bus), subscribes before
 * sending so no delta is missed, and prints until the bot's message is finished. It also asks
 * the thread now and then, so a stream that went quiet (the daemon stopped, an event lost) ends
 * the command with what happened instead of leaving it waiting.
 *
 * `program` may be the `bots` command itself (the subcommands are added to it) or the root
 * program (a `bots` command is created).
 */
import type { Command } from 'commander';
import { SubconsciousError } from '../core/errors.js';
import type { RpcCall } from '../protocol/client.js';
import type { BotsEvents, BotsMethods, BotWithStatus, Message } from '../protocol/bots.js';

export type BotsCall = RpcCall<BotsMethods>;

/** One event as it travels (SSE or the bus); events of other modules may pass by too. */
export type BotsWireEvent = { [K in keyof BotsEvents]: { type: K; data: BotsEvents[K] } }[keyof BotsEvents] | { type: string; data: unknown };

/**
 * Listen to events until unsubscribed (the subscription may take a moment to open: it resolves
 * once events flow). `onEnd`, when the source can tell, is called if the stream ends by itself
 * (the daemon went away), with a reason.
 */
export type EventSubscribe = (listener: (event: BotsWireEvent) => void, onEnd: (reason: string) => void) => (() => void) | Promise<() => void>;

export interface BotsCliOptions {
  /** Events for `send` to stream from; without it, `send` prints the ids and returns. */
  subscribe?: EventSubscribe | undefined;
  /** Whole lines (default console.log). */
  print?: ((line: string) => void) | undefined;
  /** Streamed text as it comes (default process.stdout.write). */
  write?: ((chunk: string) => void) | undefined;
  /** How often `send` asks the thread whether the reply finished, in case the stream went quiet (default 3 s). */
  checkEveryMs?: number | undefined;
  /**
   * Does a daemon run the bots (false: this command's own process does, for its length)? Without
   * one, `send --no-wait` is refused: the reply would be cut off when the command returns.
   */
  daemonRunning?: (() => Promise<boolean>) | undefined;
}

const FINISHED: readonly Message['status'][] = ['done', 'error', 'stopped'];

export function registerBotsCommands(program: Command, call: BotsCall, options: BotsCliOptions = {}): Command {
  const print = options.print ?? ((l: string) => console.log(l));
  const write = options.write ?? ((c: string) => void process.stdout.write(c));
  const bots = program.name() === 'bots' ? program : program.command('bots').description('bots: AI teammates with threads, tasks and routines');

  bots
    .command('list')
    .description('list bots with their status')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows = await call('bots.list', {});
      if (opts.json) return print(JSON.stringify(rows, null, 2));
      for (const line of formatBotTable(rows)) print(line);
    });

  bots
    .command('create')
    .description('create a bot')
    .argument('<name>', 'its @mention handle: lower-case letters, digits, - or _')
    .option('-l, --label <label>', 'display name (default: the name)')
    .option('-d, --description <text>', 'what the bot is for')
    .option('-p, --persona <text>', 'how it should behave (its system prompt)')
    .option('-m, --model <model>', 'agent | local | agent:<model> | local:<model> | <model> (on the agent endpoint)')
    .option('-t, --tools <servers>', 'comma-separated MCP server names it may use')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { label?: string; description?: string; persona?: string; model?: string; tools?: string; json?: boolean }) => {
      const bot = await call('bots.create', {
        name,
        ...(opts.label !== undefined ? { label: opts.label } : {}),
        ...(opts.description !== undefined ? { description: opts.description } : {}),
        ...(opts.persona !== undefined ? { persona: opts.persona } : {}),
        ...(opts.model !== undefined ? { model: opts.model } : {}),
        ...(opts.tools !== undefined
          ? {
              tools: opts.tools
                .split(',')
                .map((t) => t.trim())
                .filter(Boolean),
            }
          : {}),
      });
      if (opts.json) return print(JSON.stringify(bot, null, 2));
      print(`created @${bot.name} (${bot.id})${bot.tools.length ? ` with tools ${bot.tools.join(', ')}` : ''}`);
    });

  bots
    .command('send')
    .description("send a message to a bot's direct thread and print the reply as it streams")
    .argument('<bot>', 'bot name (@name) or id')
    .argument('<text...>', 'the message')
    .option('--no-wait', 'print the task id and return at once')
    .option('--json', 'print the send result as JSON (and the final message)')
    .action(async (who: string, words: string[], opts: { wait: boolean; json?: boolean }) => {
      if (!opts.wait && options.daemonRunning && !(await options.daemonRunning())) {
        throw new SubconsciousError(
          'conflict',
          'bots send --no-wait needs a running daemon: without one this command runs the bot itself, and the reply would be cut off when it returns. Nothing was sent.',
          { hint: 'Start the daemon (`subconscious start`) and send again, or drop --no-wait to wait here for the reply.' },
        );
      }
      const bot = await resolveBot(call, who);
      const stream = opts.wait && options.subscribe ? options.subscribe : undefined;
      const watcher = stream ? await watchReply(stream, { write, print }) : undefined;
      let sent;
      try {
        sent = await call('bots.send_message', { bot_id: bot.id, text: words.join(' ') });
      } catch (err) {
        watcher?.cancel();
        throw err;
      }
      const mine = sent.dispatched[0]!;
      if (!watcher) {
        if (opts.json) return print(JSON.stringify(sent, null, 2));
        return print(`sent to @${bot.name}: task ${mine.task_id}${opts.wait ? ' (no event stream to follow; see `bots list` or the page)' : ''}`);
      }
      const final = await watcher.follow(mine.message_id, mine.task_id, {
        everyMs: options.checkEveryMs ?? 3000,
        check: async () => {
          const [view, list] = await Promise.all([call('bots.thread', { thread_id: sent.thread_id, limit: 50 }), call('bots.list', {})]);
          const b = list.find((x) => x.id === bot.id);
          return { message: view.messages.find((m) => m.id === mine.message_id), running: b !== undefined && b.status !== 'idle' };
        },
      });
      if (opts.json) print(JSON.stringify({ ...sent, reply: final }, null, 2));
      if (final.status !== 'done') {
        print(`(${final.status}${final.error ? `: ${final.error}` : ''})`);
        process.exitCode = 1;
      }
    });

  bots
    .command('stop')
    .description('stop a bot: its run and its queue are cancelled for good')
    .argument('<bot>', 'bot name (@name) or id')
    .option('--json', 'print JSON')
    .action(async (who: string, opts: { json?: boolean }) => {
      const bot = await resolveBot(call, who);
      const r = await call('bots.stop_bot', { bot_id: bot.id });
      if (opts.json) return print(JSON.stringify(r, null, 2));
      print(r.message);
    });

  for (const [verb, approve] of [
    ['approve', true],
    ['deny', false],
  ] as const) {
    bots
      .command(verb)
      .description(`${verb} a bot's pending tool call`)
      .argument('<id>', 'approval id (printed by `bots send`, listed on the page)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { json?: boolean }) => {
        const a = await call('bots.answer_approval', { id, approve });
        if (opts.json) return print(JSON.stringify(a, null, 2));
        print(`${a.state} ${a.tool} on ${a.server} (${a.id})`);
      });
  }

  return bots;
}

/** `@name`, `name` or an id → the bot (a clear not_found otherwise). */
export async function resolveBot(call: BotsCall, who: string): Promise<BotWithStatus> {
  const key = who.trim().replace(/^@/, '');
  const list = await call('bots.list', {});
  const bot = list.find((b) => b.id === key) ?? list.find((b) => b.name === key.toLowerCase());
  if (!bot) {
    throw new SubconsciousError('not_found', `No bot named or with id "${who}".`, {
      hint: list.length ? `Bots: ${list.map((b) => `@${b.name}`).join(', ')}.` : 'Create one with `subconscious bots create <name>`.',
    });
  }
  return bot;
}

/** How `follow` makes sure a quiet stream does not leave it waiting. */
export interface FollowCheck {
  /** The message as the daemon has it now (undefined: not found), and whether its bot still has work going. */
  check: () => Promise<{ message: Message | undefined; running: boolean }>;
  everyMs: number;
}

/** Checks in a row that found the reply unfinished with nothing running it, before giving up on it. */
const ORPHAN_CHECKS = 2;

/**
 * Follow one bot message over the event stream: subscribe first (events before the message id
 * is known are kept), then print its deltas and approval requests until it is finished. With a
 * `FollowCheck`, the message is also read now and then: finished there while the stream said
 * nothing, the rest of its text is printed and it ends; a failed read ends it with that error;
 * and a reply still unfinished while its bot runs nothing (the daemon that ran it was killed,
 * and the calls now reach the store itself) ends it with that reason instead of waiting forever.
 */
export async function watchReply(subscribe: EventSubscribe, out: { write: (chunk: string) => void; print: (line: string) => void }) {
  const early: BotsWireEvent[] = [];
  let target: string | null = null;
  let targetTask: string | null = null;
  let settle: ((m: Message) => void) | null = null;
  let fail: ((err: Error) => void) | null = null;
  let written = '';
  let atLineStart = true;
  let ended: string | null = null;
  let finished = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const emit = (chunk: string) => {
    if (!chunk) return;
    out.write(chunk);
    written += chunk;
    atLineStart = chunk.endsWith('\n');
  };
  const streamEnded = (reason: string) =>
    new SubconsciousError('cancelled', `The event stream ended before the reply finished: ${reason}`, {
      hint: 'Is the daemon still running? The reply continues there; see the page.',
    });

  const finish = (m: Message): void => {
    if (finished) return;
    finished = true;
    if (timer !== null) clearTimeout(timer);
    // What the stream did not bring (all of it, when no delta came) is printed from the message.
    if (!written) emit(m.text);
    else if (m.text.startsWith(written)) emit(m.text.slice(written.length));
    if (!atLineStart) emit('\n');
    unsubscribe?.();
    settle?.(m);
  };
  const abort = (err: Error): void => {
    if (finished) return;
    finished = true;
    if (timer !== null) clearTimeout(timer);
    unsubscribe?.();
    fail?.(err);
  };

  const handle = (e: BotsWireEvent): void => {
    if (finished) return;
    if (target === null) {
      early.push(e);
      return;
    }
    if (e.type === 'bots.message_delta') {
      const d = e.data as BotsEvents['bots.message_delta'];
      if (d.message_id === target) emit(d.delta);
    } else if (e.type === 'bots.approval_changed') {
      const a = (e.data as BotsEvents['bots.approval_changed']).approval;
      if (a.state === 'pending' && a.task_id === targetTask) {
        if (!atLineStart) emit('\n');
        out.print(`approval needed: ${a.tool} on ${a.server} ${JSON.stringify(a.arguments)} — answer with \`subconscious bots approve ${a.id}\` (or deny)`);
      }
    } else if (e.type === 'bots.message_changed') {
      const m = (e.data as BotsEvents['bots.message_changed']).message;
      if (m.id === target && FINISHED.includes(m.status)) finish(m);
    }
  };
  let unsubscribe: (() => void) | null = null;
  unsubscribe = await subscribe(handle, (reason) => {
    ended = reason;
    if (target !== null) abort(streamEnded(reason));
  });

  return {
    cancel: () => {
      finished = true;
      if (timer !== null) clearTimeout(timer);
      unsubscribe?.();
    },
    follow(messageId: string, taskId: string, watch?: FollowCheck): Promise<Message> {
      return new Promise<Message>((resolve, reject) => {
        settle = resolve;
        fail = reject;
        target = messageId;
        targetTask = taskId;
        if (ended !== null) return abort(streamEnded(ended));
        for (const e of early.splice(0)) handle(e);
        if (!watch || finished) return;
        let orphaned = 0;
        const tick = () => {
          timer = setTimeout(() => {
            timer = null;
            watch.check().then(
              ({ message: m, running }) => {
                if (finished) return;
                if (m && FINISHED.includes(m.status)) return finish(m);
                orphaned = running ? 0 : orphaned + 1;
                if (orphaned >= ORPHAN_CHECKS) {
                  return abort(
                    new SubconsciousError('cancelled', 'The reply stopped: nothing is running it any more (the daemon that ran it went away).', {
                      hint: 'Start the daemon again (`subconscious start`): the task is marked interrupted and can be resumed; its text so far is kept.',
                    }),
                  );
                }
                tick();
              },
              (err: unknown) => abort(err instanceof Error ? err : new Error(String(err))),
            );
          }, watch.everyMs);
        };
        tick();
      });
    },
  };
}

/** NAME, STATUS, QUEUED, ATTENTION, MODEL, TOOLS, LABEL. */
export function formatBotTable(rows: BotWithStatus[]): string[] {
  if (rows.length === 0) return ['no bots (create one with `subconscious bots create <name>`)'];
  const table = rows.map((b) => [
    `@${b.name}`,
    b.status,
    String(b.queued),
    String(b.needs_attention),
    b.model ? `${b.model_role}:${b.model}` : b.model_role,
    b.tools.join(',') || '-',
    b.label,
  ]);
  const head = ['NAME', 'STATUS', 'QUEUED', 'ATTENTION', 'MODEL', 'TOOLS', 'LABEL'];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...table.map(line)];
}
