/**
 * Control lines (seed 2 §8, seed 1 "RECOMMENDED ACTION"): lines in the model's FINAL answer that
 * talk to the host, not to the user. They are parsed into typed values and stripped from what
 * the user sees. Only the final assistant text is parsed: tool output is data, so a control
 * line inside a tool result never counts (the runner never passes tool output here).
 *
 *   MEMORY: <note>            TEAM_MEMORY: <note>          HANDOFF: <note>
 *   FOLLOWUP: 10m — <reason>  FOLLOWUP: when user replies — <reason>
 *   BLOCKED: <what is missing>
 *   RECOMMENDED ACTION: <an unsolicited write the user should approve>
 *
 * A line counts when it starts (after optional indentation, a `- ` bullet or `**` bold) with
 * one of the keywords in upper case followed by `:`. A control line with a value that cannot
 * be understood is still stripped and comes back as `{kind: 'invalid'}`, so nothing is lost.
 */

export type FollowUpDue = { kind: 'delay'; dueInMs: number } | { kind: 'user' };

export type ControlLine =
  | { kind: 'memory'; text: string }
  | { kind: 'team_memory'; text: string }
  | { kind: 'handoff'; text: string }
  | { kind: 'followup'; due: FollowUpDue; note: string }
  | { kind: 'blocked'; text: string }
  | { kind: 'recommended_action'; text: string }
  | { kind: 'invalid'; keyword: string; line: string; reason: string };

export interface ParsedControlLines {
  /** The text with every control line removed (what the user sees). */
  visible: string;
  controls: ControlLine[];
}

const KEYWORDS = ['MEMORY', 'TEAM_MEMORY', 'HANDOFF', 'FOLLOWUP', 'BLOCKED', 'RECOMMENDED ACTION'] as const;
type Keyword = (typeof KEYWORDS)[number];

const LINE_RE = /^\s*(?:[-*]\s+)?(?:\*\*)?(TEAM_MEMORY|MEMORY|HANDOFF|FOLLOWUP|BLOCKED|RECOMMENDED ACTION)(?:\*\*)?\s*:(?:\*\*)?[ \t]*(.*?)\s*$/;

/** Longest follow-up delay we accept: anything further out is almost certainly a mistake. */
export const MAX_FOLLOWUP_MS = 30 * 24 * 3600_000;

export function parseControlLines(text: string): ParsedControlLines {
  const kept: string[] = [];
  const controls: ControlLine[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = LINE_RE.exec(line);
    if (!m) {
      kept.push(line);
      continue;
    }
    controls.push(toControl(m[1] as Keyword, (m[2] ?? '').trim(), line.trim()));
  }
  return { visible: tidy(kept.join('\n')), controls };
}

function toControl(keyword: Keyword, value: string, line: string): ControlLine {
  if (!value) return { kind: 'invalid', keyword, line, reason: `${keyword}: has no value` };
  switch (keyword) {
    case 'MEMORY':
      return { kind: 'memory', text: value };
    case 'TEAM_MEMORY':
      return { kind: 'team_memory', text: value };
    case 'HANDOFF':
      return { kind: 'handoff', text: value };
    case 'BLOCKED':
      return { kind: 'blocked', text: value };
    case 'RECOMMENDED ACTION':
      return { kind: 'recommended_action', text: value };
    case 'FOLLOWUP':
      return parseFollowUp(value, line);
  }
}

const SEPARATOR_RE = /^(.+?)\s+(?:—|–|--?)\s+(.*)$/;
const USER_RE = /^when\s+(?:the\s+)?user\s+repl(?:ies|y)$/i;
const DELAY_RE = /^(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$/i;

function parseFollowUp(value: string, line: string): ControlLine {
  const sep = SEPARATOR_RE.exec(value);
  const dueText = (sep ? sep[1] : value)!.trim();
  const note = (sep ? sep[2] : '')!.trim();
  if (USER_RE.test(dueText)) return { kind: 'followup', due: { kind: 'user' }, note };
  const d = DELAY_RE.exec(dueText);
  if (!d) {
    return { kind: 'invalid', keyword: 'FOLLOWUP', line, reason: `FOLLOWUP: "${dueText}" is neither a delay like 10m / 2h nor "when user replies"` };
  }
  const dueInMs = Math.round(Number(d[1]) * unitMs(d[2]!));
  if (dueInMs <= 0 || dueInMs > MAX_FOLLOWUP_MS) {
    return { kind: 'invalid', keyword: 'FOLLOWUP', line, reason: `FOLLOWUP: delay "${dueText}" must be above 0 and at most 30 days` };
  }
  return { kind: 'followup', due: { kind: 'delay', dueInMs }, note };
}

function unitMs(unit: string): number {
  const u = unit.toLowerCase();
  if (u.startsWith('s')) return 1000;
  if (u.startsWith('m')) return 60_000;
  if (u.startsWith('h')) return 3600_000;
  return 24 * 3600_000;
}

/** Drop the blank lines a removed control line leaves behind. */
function tidy(text: string): string {
  return text.replace(/\n{3,}/g, '\n\n').trim();
}

/**
 * Hides control lines from live text deltas, so a page streaming a run never shows them.
 * A line is held back only while it could still turn into a control line; everything else
 * flows through at once. The final text is still parsed with `parseControlLines`.
 */
export class ControlLineFilter {
  private line = '';
  private state: 'undecided' | 'visible' | 'control' = 'undecided';

  push(delta: string): string {
    let out = '';
    for (const ch of delta) {
      if (ch === '\n') {
        if (this.state === 'visible') out += '\n';
        else if (this.state === 'undecided') out += LINE_RE.test(this.line) ? '' : `${this.line}\n`;
        this.line = '';
        this.state = 'undecided';
        continue;
      }
      if (this.state === 'visible') {
        out += ch;
        continue;
      }
      if (this.state === 'control') continue;
      this.line += ch;
      if (HEAD_RE.test(this.line)) this.state = 'control';
      else if (!couldBecomeControl(this.line)) {
        out += this.line;
        this.state = 'visible';
      }
    }
    return out;
  }

  /** The end of the text: release a held partial line unless it is a control line. */
  end(): string {
    const rest = this.state === 'undecided' && !LINE_RE.test(this.line) ? this.line : '';
    this.line = '';
    this.state = 'undecided';
    return rest;
  }
}

const HEAD_RE = /^\s*(?:[-*]\s+)?(?:\*\*)?(TEAM_MEMORY|MEMORY|HANDOFF|FOLLOWUP|BLOCKED|RECOMMENDED ACTION)(?:\*\*)?\s*:/;

function couldBecomeControl(partial: string): boolean {
  let rest = partial.replace(/^\s+/, '');
  if (/^[-*]{0,2}$/.test(rest)) return true;
  rest = rest.replace(/^[-*]\s+/, '').replace(/^\*\*/, '');
  return KEYWORDS.some((k) => k.startsWith(rest) || (rest.startsWith(k) && /^(?:\*{1,2})?\s*$/.test(rest.slice(k.length))));
}
