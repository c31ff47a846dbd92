/**
 * Example (c): the heartbeat for your own agent runtime, over the wire (issue 18 §6).
 *
 *   subconscious start                                   (prints http://127.0.0.1:7777/?token=…)
 *   SUBCONSCIOUS_URL=http://127.0.0.1:7777 SUBCONSCIOUS_TOKEN=… \
 *   AGENT_BASE_URL=http://127.0.0.1:11434/v1 AGENT_MODEL=llama3.2 node external-runtime.js
 *
 * "Your runtime" is a small AI SDK agent loop with one tool. It registers its bot with the daemon
 * (webhook delivery, the secret in a file both sides read), reports the task a crash cut off, and
 * gets the heartbeat's resume on its webhook: it checks the signature, acknowledges the dispatch
 * (its start — once), runs the loop on the wake-up text, and reports the reply and the task done.
 * The run's final answer goes with it as its `outcome`: a `FOLLOWUP: 1d — …` or `BLOCKED: …` line
 * in it acts as a built-in bot's (a follow-up the heartbeat keeps, or a check-in for the person).
 * Every call goes through the typed client; the dispatch is typed from the protocol.
 *
 * For the demo the bot resumes without a pulse (`auto_resume_on_restart`: a task cut off with a
 * checkpoint and no attempts yet) and a person's "Check now" (`bots.heartbeat_now`); with a pulse
 * model configured the heartbeat decides on its own, at its next tick.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { createClient, verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER } from 'subconscious-engine/client';
import type { RuntimeDispatch, RuntimeWebhook } from 'subconscious-engine/protocol';

const url = process.env.SUBCONSCIOUS_URL ?? 'http://127.0.0.1:7777';
const token = process.env.SUBCONSCIOUS_TOKEN;
if (!token) throw new Error('Set SUBCONSCIOUS_TOKEN (the file <workspace>/.subconscious/token).');
const client = createClient({ url, token });

const RUNTIME = 'example-runtime';
const INSTANCE = randomUUID(); // a fresh id per process: the daemon tells a restart by it

// The webhook secret, in a file the daemon reads at each delivery (never sent, never stored).
const dir = mkdtempSync(path.join(os.tmpdir(), 'runtime-secret-'));
const secretFile = path.join(dir, 'webhook-secret');
const secret = randomBytes(32).toString('hex');
writeFileSync(secretFile, secret, { mode: 0o600 });

// ── the agent loop: a model and a tool ──────────────────────────────────────
const provider = createOpenAICompatible({
  name: 'agent',
  baseURL: process.env.AGENT_BASE_URL ?? 'http://127.0.0.1:11434/v1',
  ...(process.env.AGENT_API_KEY ? { apiKey: process.env.AGENT_API_KEY } : {}),
});
const model = provider(process.env.AGENT_MODEL ?? 'llama3.2');
const drafts = new Map<string, string>();
const tools = {
  save_draft: tool({
    description: 'Save the draft of a post.',
    inputSchema: z.object({ title: z.string(), body: z.string() }),
    execute: async ({ title, body }) => {
      drafts.set(title, body);
      return { saved: true, chars: body.length };
    },
  }),
};

async function runAgent(input: string) {
  return generateText({
    model,
    system: [
      'You are Writer, a bot that drafts short posts. Save the draft with save_draft, then say in one sentence what you did.',
      'If something should be checked later, end with a line `FOLLOWUP: <delay like 2h or 1d> — <what to check>`;',
      'if you cannot go on without the person, end with `BLOCKED: <the one question for them>`.',
    ].join(' '),
    prompt: input,
    tools,
    stopWhen: stepCountIs(4),
  });
}

// ── the webhook: signature, dedupe by idempotency key, answer at once, work after ──
const seen = new Set<string>();
let resolveDone!: (d: RuntimeDispatch) => void;
const resumed = new Promise<RuntimeDispatch>((r) => (resolveDone = r));

async function handle(d: RuntimeDispatch): Promise<void> {
  if (d.kind !== 'resume') {
    console.log(`dispatch ${d.kind}: ${d.text}`);
    await client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: INSTANCE });
    return;
  }
  console.log(`resume received: task ${d.task_id}, attempt ${d.attempt}, note "${d.note}"`);
  // The ack is the start: the claimed task is ours under its lease, once (a conflict means: do not run it).
  const ack = await client.call('runtime.ack', { runtime_id: RUNTIME, dispatch_id: d.id, instance_id: INSTANCE });
  console.log(`acked: the task is ours for ${Math.round((ack.lease_until! - Date.now()) / 1000)} s without a report`);
  const result = await runAgent(d.text);
  const calls = result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName));
  console.log(`agent: ${result.text} (tools: ${calls.join(', ') || 'none'})`);
  await client.call('runtime.report', {
    runtime_id: RUNTIME,
    messages: [{ id: `reply-${d.id}`, thread_id: d.thread_id, role: 'bot', bot_id: d.bot_id, task_id: d.task_id!, text: result.text }],
    runs: [
      {
        id: `run-${d.id}`,
        bot_id: d.bot_id,
        task_id: d.task_id!,
        status: 'done',
        dispatch_id: d.id,
        outcome: result.text, // its FOLLOWUP:/BLOCKED: lines reach the heartbeat
        usage: { calls: result.steps.length, input_tokens: result.totalUsage.inputTokens ?? 0, output_tokens: result.totalUsage.outputTokens ?? 0 },
      },
    ],
    tasks: [{ id: d.task_id!, bot_id: d.bot_id, status: 'done', dispatch_id: d.id }],
  });
  console.log(`reported: ${d.task_id} done`);
  resolveDone(d);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const header = req.headers[WEBHOOK_SIGNATURE_HEADER];
      if (!(await verifyWebhookSignature({ secret, body, header: typeof header === 'string' ? header : undefined }))) {
        res.writeHead(401).end();
        return;
      }
      const { dispatch } = JSON.parse(body) as RuntimeWebhook;
      res.writeHead(200).end(); // received; the work comes after (a retry carries the same idempotency key)
      if (seen.has(dispatch.id)) return;
      seen.add(dispatch.id);
      await handle(dispatch).catch((err: unknown) => console.error(`dispatch ${dispatch.id}: ${(err as Error).message}`));
    })();
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const webhook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/subconscious`;

try {
  // ── register the runtime and its bot ─────────────────────────────────────
  const reg = await client.call('runtime.register', {
    runtime_id: RUNTIME,
    name: 'Example agent runtime',
    instance_id: INSTANCE,
    delivery: { kind: 'webhook', url: webhook, secret_file: secretFile },
    bots: [{ id: 'writer', name: 'writer', label: 'Writer', description: 'Drafts short posts.' }],
  });
  const bot = reg.bots[0]!;
  console.log(`registered ${RUNTIME}: bot ${bot.id} is ${bot.subconscious_id} for the heartbeat`);

  // ── what a crash left: the person's request, a reply cut off, the task failed + interrupted ──
  const now = Date.now();
  await client.call('runtime.report', {
    runtime_id: RUNTIME,
    messages: [
      { id: 'm-1', thread_id: bot.thread_id, role: 'user', text: 'Draft a short post announcing our new API.', created_at: now - 10 * 60_000 },
      {
        id: 'm-2',
        thread_id: bot.thread_id,
        role: 'bot',
        bot_id: bot.id,
        task_id: 'post-1',
        text: 'Outline: what, why, how. Draft: We',
        status: 'error',
        interrupted: true,
        created_at: now - 9 * 60_000,
      },
    ],
    tasks: [
      {
        id: 'post-1',
        bot_id: bot.id,
        title: 'Announce the new API',
        status: 'failed',
        error_kind: 'interrupted',
        error: 'the runtime crashed',
        checkpoint: 'Outline written.',
      },
    ],
  });
  console.log('reported: post-1 interrupted by a crash');

  // ── the heartbeat resumes it (here at once; on its own at its next tick) ──
  await client.call('bots.set_heartbeat_settings', { bot_id: bot.subconscious_id, auto_resume_on_restart: true });
  await client.call('bots.heartbeat_now', { bot_id: bot.subconscious_id });
  const timer = setTimeout(() => {
    console.error('no resume within 60 s');
    process.exit(1);
  }, 60_000);
  const d = await resumed;
  clearTimeout(timer);

  const log = await client.call('bots.heartbeat_log', { bot_id: bot.subconscious_id, limit: 5 });
  console.log(`heartbeat log: ${log.map((e) => e.outcome).join(', ')}`);
  const { followups, checkins } = await client.call('bots.heartbeat_snapshot', { bot_ids: [bot.subconscious_id] });
  for (const f of followups)
    console.log(`follow-up ${f.state}: "${f.note}" due ${f.due_at === null ? 'when the person replies' : new Date(f.due_at).toISOString()}`);
  for (const c of checkins) console.log(`check-in ${c.state}: "${c.question}"`);
  const [dispatch] = await client.call('runtime.dispatches', { runtime_id: RUNTIME, limit: 1 });
  console.log(`dispatch ${dispatch!.id === d.id ? 'ours' : dispatch!.id}: ${dispatch!.state} after ${dispatch!.deliveries} delivery`);
  console.log(`drafts saved: ${drafts.size}`);
} finally {
  await client.call('runtime.unregister', { runtime_id: RUNTIME }).catch(() => undefined);
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
