/**
 * A bot run's inputs: the persona (system), the thread's history up to the run's own message,
 * the bot's model and tools, and the run's caps. Every bot run is `tainted` (it reads messages
 * and tool output): writing tools ask for an approval unless granted `allow_automatically`.
 */
import type { RunOptions } from '../agent/index.js';
import type { Bot } from '../protocol/bots.js';
import type { BotStore } from './bot-store.js';
import type { BotsConfig } from './config.js';
import { historyMessages, personaText, type PersonaSection } from './prompt.js';
import type { Job } from './queue.js';
import type { ThreadStore } from './thread-store.js';

export const BOTS_WORLD = 'bots';

export async function buildRunOptions(
  d: { bots: BotStore; threads: ThreadStore; config: BotsConfig; personaSections: readonly PersonaSection[] },
  r: { job: Job; bot: Bot; title: string; runId: string },
): Promise<Omit<RunOptions, 'onApprovalRequested'>> {
  const { job, bot } = r;
  const { config } = d;
  const thread = await d.threads.require(job.threadId);
  const members = await d.bots.byIds(thread.bot_ids);
  const own = await d.threads.getMessage(job.messageId);
  const page = await d.threads.page(job.threadId, { before: own?.seq ?? Number.MAX_SAFE_INTEGER, limit: config.history_messages });
  const strangers = new Set(page.messages.map((m) => m.bot_id).filter((b): b is string => !!b && !members.some((x) => x.id === b)));
  const botsById = new Map([...members, ...(await d.bots.byIds([...strangers]))].map((b) => [b.id, b]));
  // Other runs' messages still being written are not history yet.
  const history = page.messages.filter((m) => m.status !== 'queued' && !(m.role === 'bot' && m.status === 'streaming'));
  return {
    world: BOTS_WORLD,
    purpose: job.purpose,
    title: r.title,
    runId: r.runId,
    system: personaText(bot, thread, members, d.personaSections),
    messages: historyMessages(history, {
      bot,
      botsById,
      taskId: job.taskId,
      request: job.request,
      maxMessages: config.history_messages,
      maxChars: config.history_chars,
    }),
    mode: 'tainted',
    attended: job.source === 'user',
    role: bot.model_role,
    model: bot.model ?? undefined,
    servers: bot.tools,
    // Unset here: the agent runner's own caps (the app's `[agent]` section).
    capMs: config.run_cap_minutes !== undefined ? Math.round(config.run_cap_minutes * 60_000) : undefined,
    maxSteps: config.max_steps,
    approvalExpiryMs: config.unattended_approval_minutes * 60_000,
  };
}
