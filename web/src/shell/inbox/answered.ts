/**
 * "Answered lately" under Needs you (issue 18 §5): the escalations and check-ins a person
 * answered, each saying how — on the page, over RPC (by the name the caller gave), from the CLI,
 * over MCP (by the MCP client's own name), or in the bot's thread. Pure: the hook feeds it the reads.
 */
import type { AnswerVia, Checkin, Escalation } from '../../../../src/protocol/index.js';

export interface AnsweredItem {
  kind: 'escalation' | 'checkin';
  key: string;
  /** What was answered: the escalation's title, or the check-in's question. */
  what: string;
  /** The bot a check-in was about (null: an escalation, or a bot not known by name). */
  bot: string | null;
  /** What the answer did, in words: `answered`, `dismissed`, `approved`, `retried`. */
  verb: string;
  via: AnswerVia | null;
  by: string | null;
  at: number;
}

/** How many the list shows. */
export const ANSWERED_SHOWN = 10;

/** "on the page", "over MCP by Claude Desktop", "over RPC by ops-script", "in the thread"… */
export function answeredHow(via: AnswerVia | null, by: string | null): string {
  const named = by && by !== 'you' ? by : null;
  switch (via) {
    case 'page':
      return 'on the page';
    case 'mcp':
      return `over MCP by ${by ?? 'an MCP client'}`;
    case 'rpc':
      return named ? `over RPC by ${named}` : 'over RPC';
    case 'cli':
      return named ? `from the CLI by ${named}` : 'from the CLI';
    case 'subconscious':
      return 'by subconscious';
    case null:
      return 'in the thread';
  }
}

/** "Answered over MCP by Claude Desktop". */
export function answeredWords(a: Pick<AnsweredItem, 'verb' | 'via' | 'by'>): string {
  const text = `${a.verb} ${answeredHow(a.via, a.by)}`;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function escalationVerb(e: Escalation): string {
  switch (e.answer?.kind) {
    case 'ignore':
      return 'dismissed';
    case 'accept':
      return 'approved';
    case 'edit':
      return 'approved with changes';
    default:
      return 'answered';
  }
}

export function collectAnswered(s: {
  escalations?: readonly Escalation[] | undefined;
  checkins?: readonly Checkin[] | undefined;
  botNames?: ReadonlyMap<string, string> | undefined;
}): AnsweredItem[] {
  const items: AnsweredItem[] = [];
  for (const e of s.escalations ?? []) {
    // A person's answer only: one that resolved by itself (or an older row) says nothing of who.
    if (e.status === 'pending' || !e.answer || e.answer.via === 'subconscious' || e.resolved_at === null) continue;
    items.push({
      kind: 'escalation',
      key: `esc:${e.id}`,
      what: e.title,
      bot: null,
      verb: escalationVerb(e),
      via: e.answer.via,
      by: e.answer.by,
      at: e.resolved_at,
    });
  }
  for (const c of s.checkins ?? []) {
    if (c.state === 'pending' || c.resolved_at === null) continue;
    // Answered in the thread has no face; anything else without one was not a person's answer.
    if (c.answered_via === null && c.state !== 'answered') continue;
    const verb = c.state === 'dismissed' ? 'dismissed' : c.state === 'superseded' ? 'retried' : 'answered';
    items.push({
      kind: 'checkin',
      key: `chk:${c.id}`,
      what: c.question,
      bot: s.botNames?.get(c.bot_id) ?? null,
      verb,
      via: c.answered_via,
      by: c.answered_by,
      at: c.resolved_at,
    });
  }
  return items.sort((a, b) => b.at - a.at || a.key.localeCompare(b.key)).slice(0, ANSWERED_SHOWN);
}
