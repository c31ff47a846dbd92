/**
 * The pulse's whole input (seed 2 §5.3), built only when triage found a candidate. Every
 * untrusted field (messages, titles, errors, checkpoints, notes) is one clean line: control-line
 * prefixes and fence tags removed, length-capped. The digest is measured as it will be sent
 * (fenced, §6.4) and, when over budget (1.5k tokens), cut field by field — the least useful first
 * — until it fits.
 */
import { cleanLine, estimateTokens, fence } from '../../llm/index.js';
import type { Bot, Message, Task } from '../../protocol/bots.js';
import type { Candidate } from './rules.js';

export const DIGEST_BUDGET_TOKENS = 1500;

export interface DigestInput {
  bot: Pick<Bot, 'name' | 'label' | 'description'>;
  now: number;
  timezone: string;
  messages: readonly Message[];
  userActiveAt: number | null;
  candidates: readonly Candidate[];
  openTasks: readonly Task[];
  pendingApprovals: number;
  followUps: readonly { note: string; dueAt: number | null }[];
  limits: { pulsesToday: number; maxPulsesPerDay: number; resumesToday: number; maxResumesPerDay: number };
  quietHours: boolean;
  /** The bot's newest turn asks the person something. */
  botAskedQuestion: boolean;
}

export interface Digest {
  /** The fenced text that goes to the model. */
  text: string;
  tokens: number;
  /** Fields cut to fit the budget, in order (for the log and tests). */
  cuts: string[];
}

interface Caps {
  candidates: number;
  openTasks: number;
  followUps: number;
  lastUser: number;
  lastBot: number;
  description: number;
  label: number;
  title: number;
  lastError: number;
  primaryCheckpoint: number;
  otherCheckpoint: number;
  partial: number;
  note: number;
}

const START: Caps = {
  candidates: 8,
  openTasks: 10,
  followUps: 10,
  lastUser: 400,
  lastBot: 500,
  description: 300,
  label: 80,
  title: 120,
  lastError: 200,
  primaryCheckpoint: 600,
  otherCheckpoint: 200,
  partial: 400,
  note: 200,
};

/** Cuts in the order they are made, least useful first. */
const CUTS: Array<[string, (c: Caps) => void]> = [
  ['candidates→3', (c) => (c.candidates = Math.min(c.candidates, 3))],
  ['openTasks→5', (c) => (c.openTasks = Math.min(c.openTasks, 5))],
  ['followUps→3', (c) => (c.followUps = Math.min(c.followUps, 3))],
  ['otherCheckpoint→80', (c) => (c.otherCheckpoint = 80)],
  ['lastBotMessage→200', (c) => (c.lastBot = 200)],
  ['lastUserMessage→200', (c) => (c.lastUser = 200)],
  ['partial→200', (c) => (c.partial = 200)],
  ['checkpoint→300', (c) => (c.primaryCheckpoint = 300)],
  ['description→100', (c) => (c.description = 100)],
  ['candidates→1', (c) => (c.candidates = 1)],
  ['openTasks→0', (c) => (c.openTasks = 0)],
  ['followUps→0', (c) => (c.followUps = 0)],
  ['title→60', (c) => (c.title = 60)],
  ['lastError→80', (c) => (c.lastError = 80)],
  ['note→80', (c) => (c.note = 80)],
  ['messages→80', (c) => ((c.lastUser = 80), (c.lastBot = 80))],
  ['checkpoint→120', (c) => ((c.primaryCheckpoint = 120), (c.partial = 80))],
  [
    'everything→40',
    (c) => {
      for (const k of ['lastUser', 'lastBot', 'description', 'label', 'title', 'lastError', 'primaryCheckpoint', 'otherCheckpoint', 'partial', 'note'] as const)
        c[k] = 40;
    },
  ],
];

export function buildDigest(input: DigestInput, budget = DIGEST_BUDGET_TOKENS): Digest {
  const caps = { ...START };
  const cuts: string[] = [];
  let text = render(input, caps);
  for (const [name, apply] of CUTS) {
    if (estimateTokens(text) <= budget) break;
    apply(caps);
    cuts.push(name);
    text = render(input, caps);
  }
  return { text, tokens: estimateTokens(text), cuts };
}

const minutes = (ms: number) => Math.round(ms / 60_000);

function render(i: DigestInput, c: Caps): string {
  const turns = i.messages.filter((m) => m.role !== 'system');
  const lastUser = [...turns].reverse().find((m) => m.role === 'user');
  const lastBot = [...turns].reverse().find((m) => m.role === 'bot' && m.text.trim() !== '');
  const lastActivity = i.messages.at(-1)?.created_at ?? null;
  const digest = {
    bot: { name: cleanLine(i.bot.name, 40), label: cleanLine(i.bot.label, c.label), description: cleanLine(i.bot.description, c.description) },
    now: isoLocal(i.now, i.timezone),
    lastActivityAgeMin: lastActivity === null ? null : minutes(i.now - lastActivity),
    userActiveAgeMin: i.userActiveAt === null ? null : minutes(i.now - i.userActiveAt),
    thread: {
      kind: 'direct',
      lastUserMessage: lastUser ? cleanLine(lastUser.text, c.lastUser) : null,
      lastBotMessage: lastBot ? cleanLine(lastBot.text, c.lastBot) : null,
      botAskedQuestion: i.botAskedQuestion,
    },
    candidates: i.candidates.slice(0, c.candidates).map((x, n) => ({
      type: x.rule,
      taskId: x.id,
      title: cleanLine(x.title, c.title),
      status: x.status,
      ageMin: minutes(i.now - x.at),
      errorKind: x.errorKind,
      lastError: x.lastError ? cleanLine(x.lastError, c.lastError) : null,
      checkpoint: x.checkpoint ? cleanLine(x.checkpoint, n === 0 ? c.primaryCheckpoint : c.otherCheckpoint) : null,
      ...(x.partial ? { partialReply: cleanLine(x.partial, n === 0 ? c.partial : c.otherCheckpoint) } : {}),
      ...(x.note ? { followUp: cleanLine(x.note, c.note) } : {}),
      attempts: x.attempts,
    })),
    openTasks: newestFirst(i.openTasks)
      .slice(0, c.openTasks)
      .map((t) => ({ taskId: t.id, status: t.status, ageMin: minutes(i.now - touched(t)) })),
    pendingApprovals: i.pendingApprovals,
    followUps: i.followUps
      .slice(0, c.followUps)
      .map((f) => ({ note: cleanLine(f.note, c.note), dueInMin: f.dueAt === null ? null : minutes(f.dueAt - i.now) })),
    limits: i.limits,
    quietHours: i.quietHours,
  };
  return fence(JSON.stringify(digest), { label: 'heartbeat digest', maxChars: 50_000 });
}

/** `2026-10-21T09:31:45+08:00`: the time as the bot's person reads it. */
export function isoLocal(epochMs: number, timeZone: string): string {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(epochMs)) if (part.type !== 'literal') p[part.type] = part.value;
  const wall = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  const offsetMin = Math.round((wall - Math.floor(epochMs / 1000) * 1000) / 60_000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const off = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}${off}`;
}

const touched = (t: Pick<Task, 'finished_at' | 'updated_at'>) => t.finished_at ?? t.updated_at;

/** Newest first (finished, else last written), so a cap cuts the oldest. */
function newestFirst<T extends Pick<Task, 'finished_at' | 'updated_at'>>(tasks: readonly T[]): T[] {
  return [...tasks].sort((a, b) => touched(b) - touched(a));
}

/**
 * The digest's open tasks: queued and working ones, and failed ones still within their attempts,
 * newest first. A failed task whose attempts are spent has its check-in; old failures never
 * crowd the recent ones out of the pulse's view.
 */
export function digestOpenTasks(tasks: readonly Task[], maxTaskAttempts: number): Task[] {
  return newestFirst(tasks.filter((t) => t.status === 'queued' || t.status === 'working' || (t.status === 'failed' && t.attempts < maxTaskAttempts)));
}
