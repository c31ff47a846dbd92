/**
 * Small text rules of seed 1: whether a title sounds like it writes (a suggestion the page shows;
 * never a grant — issue 9), whether a task is about time (its fingerprint then includes the
 * date), skill-related escalations ("Fix in Skills"), and the `RECOMMENDED ACTION:` line with its
 * priority.
 */
import type { EscalationPriority } from './types.js';

const WRITE_VERBS = [
  'send',
  'post',
  'delete',
  'remove',
  'create',
  'forward',
  'reply',
  'respond',
  'write',
  'update',
  'publish',
  'upload',
  'share',
  'invite',
  'archive',
  'move',
  'rename',
  'edit',
  'modify',
  'submit',
  'book',
  'pay',
  'purchase',
  'notify',
  'tweet',
  'comment',
  'push',
  'deploy',
  'commit',
  'merge',
  'label',
  'mark',
  'email',
  'message',
  'schedule',
  'cancel',
  'add',
  'save',
  'file',
  'assign',
  'close',
  'open',
  'approve',
  'decline',
  'accept',
  'unsubscribe',
  'order',
  'ping',
];

/**
 * A verb counts only where an instruction starts: the title's first word, or after "and",
 * "then", "also", "please", "to" or a clause separator. So "Send daily summary to Slack" and
 * "Check urgent emails and forward them" sound like writes, "Summarize Notion updates" does not.
 * It is only ever a suggestion: "Check which emails I need to reply to" sounds like one too, and
 * only the person knows (the page asks; the task stays read-only until they say yes).
 */
const WRITE_INTENT = new RegExp(`(?:^|[,;:.!?&]\\s*|\\b(?:and|then|also|please|to)\\s+)(?:${WRITE_VERBS.join('|')})(?:s|es|ed|d|ing)?\\b`, 'i');

export function soundsLikeWrite(title: string): boolean {
  return WRITE_INTENT.test(title.trim());
}

/**
 * Words that make a task about time: its judgement may change with the day alone ("Send the
 * daily digest", "Review the calendar for conflicts", "Remind me of birthdays"), so a new day
 * is a change to its inputs. `cron` tasks are due by the clock already and need no more.
 */
const TIME_WORDS =
  /\b(?:today|tonight|tomorrow|yesterday|daily|weekly|monthly|yearly|annual(?:ly)?|every\s+(?:day|morning|evening|week|month)|each\s+(?:day|morning|week)|this\s+(?:morning|afternoon|evening|week|month|year)|morning|evening|deadlines?|due|overdue|dates?|birthdays?|anniversar(?:y|ies)|calendar|agenda|meetings?|appointments?|remind(?:er|ers)?|upcoming|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|\d{1,2}(?::\d{2})?\s?(?:am|pm))\b/i;

export function isAboutTime(title: string): boolean {
  return TIME_WORDS.test(title);
}

/**
 * Seed 1's keywords for escalations that are about a skill (an MCP server / integration). A
 * keyword starts a word and may go on ("OAuth2", "re-authenticated", "disconnecting").
 */
const SKILL_WORDS = /\b(?:skill|oauth|notion|gmail|integration|disconnect|re-?auth)/i;

export function isSkillRelated(...texts: (string | null | undefined)[]): boolean {
  return texts.some((t) => typeof t === 'string' && SKILL_WORDS.test(t));
}

const RECOMMENDED = /^\s*RECOMMENDED ACTION:\s*(.+)$/im;

/** The `RECOMMENDED ACTION:` line of a text, when the runner did not already extract it. */
export function findRecommendedAction(text: string): string | undefined {
  const m = RECOMMENDED.exec(text);
  const action = m?.[1]?.trim();
  return action ? action : undefined;
}

/**
 * The analysis prompt asks for `RECOMMENDED ACTION: [critical|important|normal] …`; the tag is
 * optional and anything else is `normal`.
 */
export function splitPriority(action: string): { priority: EscalationPriority; action: string } {
  const m = /^\s*(?:\[(critical|important|normal)\]|\((critical|important|normal)\)|(critical|important|normal)\s*:)\s*(.*)$/is.exec(action);
  const tag = m?.[1] ?? m?.[2] ?? m?.[3];
  const rest = m?.[4]?.trim();
  return tag && rest ? { priority: tag.toLowerCase() as EscalationPriority, action: rest } : { priority: 'normal', action: action.trim() };
}
