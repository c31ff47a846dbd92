/**
 * The "why" of every heartbeat check, in words a person reads (issue 12 §9–10): which rule woke
 * the bot or which skip stopped it, what the pulse said, what was done. The daemon's log keeps
 * structured fields (rule, skip, verdict, outcome) and a short reason written for people; this
 * turns them into one headline and one line of detail, e.g.
 *
 *   Skipped: you were active 40 s ago
 *     It never wakes a bot while you are in its thread; it looks again 90 s after your last action there.
 *   Woke: interrupted task “Prepare the Q4 checklist” — resumed (attempt 1)
 *     Pulse: the checklist was half done
 *
 * Pure functions (no React), so the wording is one table to read and to change.
 */
import type { BotHeartbeat, CandidateRule, HeartbeatLogEntry, HeartbeatMode, SkipRule, Verdict } from '../../../../src/protocol/heartbeat.js';
import type { InstanceStatus } from '../../../../src/protocol/engine.js';
import type { DotColor } from '../../ui/Dot.js';
import { clockTime } from '../../ui/format.js';

/** What woke the bot (§5.2), as a noun phrase. */
export const RULE_TEXT: Record<CandidateRule, string> = {
  interrupted_task: 'interrupted task',
  orphan_working: 'task left without a run',
  interrupted_message: 'reply that was cut off',
  follow_up_due: 'the bot’s own follow-up',
  approval_expired: 'task whose approval expired',
  retryable_failure: 'task that failed on a passing error',
  stale_streaming: 'reply that stalled mid-stream',
  follow_up_reminder: 'your reminder',
};

/** Each skip (§5.2, §9) in words, for entries whose reason is empty. */
export const SKIP_TEXT: Record<SkipRule, string> = {
  disabled: 'the heartbeat is off for this bot',
  quiet_hours: 'quiet hours',
  busy: 'the bot was busy',
  user_active: 'you were active in the thread',
  backoff: 'backing off after pulse errors',
  group_thread: 'the work is in a group thread',
  waiting_user: 'the bot asked you a question',
  user_driving: 'you took over after the work stopped',
  superseded: 'the bot answered since the work stopped',
  asked: 'a check-in waits for you',
  exhausted: 'the task used all its attempts',
  cooldown: 'it resumed work recently',
  budget: 'today’s budget is spent',
  resume_concurrency: 'enough resumes are running already',
  nothing_unfinished: 'nothing unfinished',
};

/** What follows from each skip: what the heartbeat does next, and why that is safe. */
export const SKIP_NEXT: Record<SkipRule, string> = {
  disabled: 'Switch it on to let it check again.',
  quiet_hours: 'No pulse or resume starts in quiet hours; it looks again when they end.',
  busy: 'One wake-up per bot at a time; it looks again later.',
  user_active: 'It never wakes a bot while you are in its thread; it looks again 90 s after your last action there.',
  backoff: 'Each pulse error doubles the wait; after 3 in a row the heartbeat switches itself off.',
  group_thread: 'The heartbeat acts only in a bot’s own thread; group work is left to its members.',
  waiting_user: 'Answer in the thread: the heartbeat never resumes over an open question.',
  user_driving: 'The work is yours now; the heartbeat does not pick it up again.',
  superseded: 'The bot moved on; the heartbeat does not pick that work up again.',
  asked: 'It waits for your answer to its check-in.',
  exhausted: 'It asked you once and does nothing more until you reply, Retry, or Check now.',
  cooldown: 'After a resume it waits before it checks again.',
  budget: 'The day’s budget starts again at local midnight.',
  resume_concurrency: 'It tries again on a later check.',
  nothing_unfinished: 'No model was called. It sleeps until something changes.',
};

/** The rollout modes (§14), in the order they step up (also the order of the mode menu). */
export const MODE_TEXT: Record<HeartbeatMode, { label: string; explain: string }> = {
  off: { label: 'off', explain: 'does nothing for any bot' },
  triage: { label: 'triage', explain: 'logs the unfinished work it finds — no model call, never acts' },
  shadow: { label: 'shadow', explain: 'asks the pulse model and logs its verdict — never acts' },
  resume: { label: 'resume', explain: 'checks unfinished work, asks the pulse model, resumes it' },
};

export const VERDICT_TEXT: Record<Verdict, string> = {
  idle: 'nothing to do now',
  wait: 'wait',
  resume: 'resume',
  ask_user: 'ask you',
};

export interface Why {
  /** The colour of its dot (its meaning is always in the words too). */
  tone: DotColor;
  headline: string;
  detail: string | null;
}

const ISO = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/g;

/**
 * The daemon's reasons say "a person" / "the person" (they are written for every face); here the
 * person reading is that person. Times are shown in the reader's own clock, quotes typeset.
 */
export function forReader(text: string, now: number = Date.now()): string {
  return text
    .replace(/\b(?:a|the) person was\b/g, 'you were')
    .replace(/\b(?:a|the) person has\b/g, 'you have')
    .replace(/\b(?:a|the) person's\b/g, 'your')
    .replace(/\b(?:a|the) person\b/g, 'you')
    .replace(/\bA person's\b/g, 'Your')
    .replace(ISO, (iso) => clockTime(Date.parse(iso), now))
    .replace(/"([^"]*)"/g, '“$1”')
    .trim();
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The part of a reason after its rule (`user_active: …`, `interrupted_task → resume (attempt 1): …`). */
export function reasonTail(reason: string): string {
  const arrow = /^[a-z_]+ → (?:shadow \(logged only\): would [a-z_]+|[a-z_]+(?: \(attempt \d+\))?): ([\s\S]*)$/.exec(reason);
  if (arrow) return arrow[1]!;
  const rule = /^[a-z_]+: ([\s\S]*)$/.exec(reason);
  return rule ? rule[1]! : reason;
}

const quoted = (title: string | null) => (title ? ` “${title}”` : '');
const pulseSaid = (text: string) => (text && text !== '(no reason)' ? `Pulse: ${text}` : null);

export function whyOf(e: HeartbeatLogEntry, now: number = Date.now()): Why {
  const tail = forReader(reasonTail(e.reason), now);
  const what = e.rule ? `${RULE_TEXT[e.rule]}${quoted(e.task_title)}` : e.task_title ? `“${e.task_title}”` : 'unfinished work';
  switch (e.outcome) {
    case 'skipped': {
      const skip = e.skip ?? 'nothing_unfinished';
      const scope = e.bot_id === null ? ' (all bots)' : '';
      return { tone: 'gray', headline: `Skipped${scope}: ${tail || SKIP_TEXT[skip]}`, detail: SKIP_NEXT[skip] };
    }
    case 'candidate':
      return { tone: 'amber', headline: `Found: ${what}`, detail: 'Triage mode: logged only — no model call, nothing done.' };
    case 'verdict': {
      const v = e.verdict ?? 'idle';
      if (e.mode === 'shadow' || /→ shadow/.test(e.reason)) {
        return {
          tone: 'gray',
          headline: `Pulse would ${VERDICT_TEXT[v]}: ${what}`,
          detail: [pulseSaid(tail), 'Shadow mode: logged only, nothing done.'].filter(Boolean).join(' · '),
        };
      }
      const headline = v === 'wait' ? `Checked ${what}: not yet — it waits` : `Checked ${what}: ${VERDICT_TEXT[v]}`;
      return { tone: 'gray', headline, detail: pulseSaid(tail) };
    }
    case 'resumed': {
      const attempt = /\(attempt (\d+)\)/.exec(e.reason)?.[1];
      return {
        tone: 'blue',
        headline: `Woke: ${what} — resumed${attempt ? ` (attempt ${attempt})` : ''}`,
        detail: /^restart fast path/.test(tail) ? cap(tail) : pulseSaid(tail),
      };
    }
    case 'checked_in':
      return {
        tone: 'amber',
        headline: `Asked you${e.task_title ? ` about “${e.task_title}”` : ''}`,
        // The log strips control-line prefixes (BLOCKED:) from reasons: what is left is the bot's own words.
        detail: e.verdict === 'ask_user' ? pulseSaid(tail) : cap(tail),
      };
    case 'pulse_error':
      return { tone: 'coral', headline: `The pulse model failed: no resume`, detail: cap(tail) };
    case 'claim_lost':
      return { tone: 'amber', headline: `Did not resume ${what}`, detail: cap(tail) };
    case 'set_aside':
      return { tone: 'gray', headline: 'Stepped aside for you', detail: cap(tail) };
    case 'settled': {
      const m = /^the resume ended ([a-z]+)(?: \(([a-z_]+)\))?; ([\s\S]*)$/.exec(e.reason);
      const status = m ? `${m[1]}${m[2] ? ` (${m[2].replace(/_/g, ' ')})` : ''}` : '';
      return {
        tone: m?.[1] === 'done' ? 'green' : m?.[1] === 'failed' ? 'coral' : 'gray',
        headline: `Resume of ${e.task_title ? `“${e.task_title}”` : 'the task'} ended${status ? ` ${status}` : ''}`,
        detail: m ? cap(m[3]!) : cap(tail),
      };
    }
    case 'disabled':
      // A person's switch is a fact; the heartbeat switching itself off (pulse errors) is a problem.
      if (/\bby a person\b/.test(e.reason)) return { tone: 'gray', headline: cap(tail), detail: null };
      return { tone: 'coral', headline: 'Heartbeat switched itself off', detail: cap(tail) };
    case 'reset':
      return { tone: 'gray', headline: cap(tail), detail: null };
  }
}

/** Seconds as a person says them: 45 s, 5 min, 1 h 30 min. */
export function seconds(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  const rest = min % 60;
  return rest ? `${h} h ${rest} min` : `${h} h`;
}

/**
 * Whether the heartbeat's world ticks at all in this daemon (`subconscious.status`): switched off
 * in the config or by a person, or halted — then no bot is checked whatever its own switch says.
 * Also a pulse model that did not answer. null: nothing to say.
 */
export function worldNote(w: Pick<InstanceStatus, 'enabled' | 'disabled_by' | 'halted' | 'halt_reason' | 'optional_models_unavailable'> | undefined): {
  off: boolean;
  text: string;
} | null {
  if (!w) return null;
  if (!w.enabled) {
    return w.disabled_by
      ? {
          off: true,
          text: `The heartbeat does not run in this daemon: \`${w.disabled_by.replace(/ in subconscious\.toml$/, '')}\` in subconscious.toml. No bot is checked. Switch it on in Settings on the Subconscious tab: it applies at once.`,
        }
      : { off: true, text: 'The heartbeat world is switched off (on the Subconscious tab): no bot is checked until it is switched on again.' };
  }
  if (w.halted) return { off: true, text: `The heartbeat is halted: ${w.halt_reason ?? 'too many failed ticks'}. Lift the halt on the Subconscious tab.` };
  const local = w.optional_models_unavailable.find((m) => m.role === 'local');
  if (local) return { off: false, text: `The local model did not answer at the last check (${local.reason}); pulses on it fail until it does.` };
  return null;
}

/** The bot's heartbeat state in a few words, with the colour of its dot (`waiting`: its pending check-ins; `worldOff`: nothing ticks). */
export function stateOf(hb: BotHeartbeat, now: number = Date.now(), waiting = 0, worldOff = false): { color: DotColor; text: string; pulse: boolean } {
  if (worldOff) return { color: 'gray', text: 'Not running in this daemon', pulse: false };
  if (!hb.enabled) return { color: 'gray', text: 'Off for this bot', pulse: false };
  if (hb.mode === 'off') return { color: 'gray', text: 'Off for all bots (mode off)', pulse: false };
  if (hb.checking || hb.state === 'checking') return { color: 'blue', text: 'Checking in… (a pulse is in flight)', pulse: true };
  if (hb.state === 'resuming') return { color: 'blue', text: 'Resuming unfinished work', pulse: true };
  // A check-in waits whatever the state says (a resume that ends with BLOCKED: rests after it, too).
  if (hb.state === 'waiting_user' || waiting > 0) return { color: 'amber', text: 'Waiting for you', pulse: false };
  if (hb.cooldown_until !== null && hb.cooldown_until > now) {
    return { color: 'green', text: `Resting after a resume until ${clockTime(hb.cooldown_until, now)}`, pulse: false };
  }
  return { color: 'green', text: 'On', pulse: false };
}

/** The newest pulse verdict in the log, with the pulse's own reason (the bot's `last_reason` may be a check-in's since). */
export function lastVerdict(log: readonly HeartbeatLogEntry[], botId: string): { verdict: Verdict; reason: string; at: number } | null {
  const e = log.find((x) => x.bot_id === botId && x.verdict !== null);
  if (!e || e.verdict === null) return null;
  const tail = reasonTail(e.reason);
  return { verdict: e.verdict, reason: tail === '(no reason)' ? '' : tail, at: e.at };
}
