/**
 * The heartbeat section's sentences (web/src/tabs/bots/heartbeat-why.ts): every outcome and every
 * skip of the log reads as words a person understands — never a bare rule name — with the
 * reasons exactly as the heartbeat writes them (src/worlds/heartbeat/commit.ts, rules.ts,
 * listeners.ts, service.ts). The Chromium test sees the same sentences come from a real daemon.
 */
import { describe, expect, it } from 'vitest';
import { CANDIDATE_RULES, SKIP_RULES, type HeartbeatLogEntry, type BotHeartbeat } from '../../src/protocol/heartbeat.js';
import { forReader, lastVerdict, reasonTail, seconds, stateOf, whyOf, worldNote } from '../../web/src/tabs/bots/heartbeat-why.js';

const NOW = Date.parse('2026-10-21T09:30:00Z');

function entry(e: Partial<HeartbeatLogEntry>): HeartbeatLogEntry {
  return {
    id: 'e',
    bot_id: 'b1',
    at: NOW,
    last_at: NOW,
    repeats: 1,
    mode: 'resume',
    tier: 0,
    outcome: 'skipped',
    rule: null,
    skip: null,
    verdict: null,
    reason: '',
    task_id: null,
    task_title: null,
    dispatched: null,
    escalated: false,
    model: null,
    ms: null,
    error: null,
    input_tokens: 0,
    output_tokens: 0,
    ...e,
  };
}

/** A rule or skip name (snake_case: one-word ones like `busy` are plain English anyway) left in what a person reads. */
const RAW = new RegExp(
  `\\b(${[...CANDIDATE_RULES, ...SKIP_RULES, 'ask_user', 'pulse_error', 'claim_lost', 'set_aside', 'checked_in'].filter((n) => n.includes('_')).join('|')})\\b`,
);

describe('the why of a heartbeat check, in words', () => {
  it('a skip says what stopped it and what happens next, for each skip rule', () => {
    const why = whyOf(entry({ skip: 'user_active', reason: 'user_active: a person was active 40 s ago' }), NOW);
    expect(why).toEqual({
      tone: 'gray',
      headline: 'Skipped: you were active 40 s ago',
      detail: 'It never wakes a bot while you are in its thread; it looks again 90 s after your last action there.',
    });
    expect(whyOf(entry({ skip: 'user_driving', reason: 'user_driving: the person wrote after "Prepare the Q4 checklist" stopped' }), NOW).headline).toBe(
      'Skipped: you wrote after “Prepare the Q4 checklist” stopped',
    );
    expect(whyOf(entry({ skip: 'waiting_user', reason: 'waiting_user: the bot asked a question the person has not answered' }), NOW).headline).toBe(
      'Skipped: the bot asked a question you have not answered',
    );
    expect(whyOf(entry({ skip: 'nothing_unfinished', reason: 'nothing_unfinished: no unfinished work' }), NOW)).toMatchObject({
      headline: 'Skipped: no unfinished work',
      detail: 'No model was called. It sleeps until something changes.',
    });
    // Times the daemon writes as ISO read in the reader's own clock.
    const backoff = whyOf(entry({ skip: 'backoff', reason: `backoff: pulse errors: backing off until ${new Date(NOW + 600_000).toISOString()}` }), NOW);
    expect(backoff.headline).not.toMatch(/\d{4}-\d\d-\d\dT/);
    expect(backoff.headline).toMatch(/^Skipped: pulse errors: backing off until \d/);
    // A store-wide entry (the global budget) says so.
    expect(
      whyOf(
        entry({
          bot_id: null,
          skip: 'budget',
          reason: 'the store-wide daily budget is spent (200 pulses today (all bots)); checks resume after local midnight',
        }),
        NOW,
      ).headline,
    ).toMatch(/^Skipped \(all bots\): the store-wide daily budget is spent/);
    for (const skip of SKIP_RULES) {
      const w = whyOf(entry({ skip, reason: '' }), NOW);
      expect(w.headline, skip).toMatch(/^Skipped: [a-z]/);
      expect(`${w.headline} ${w.detail}`, skip).not.toMatch(RAW);
      expect(w.detail, skip).toMatch(/\.$/);
    }
  });

  it('a wake names the rule and the task, and the pulse’s reason; a resume’s end and a check-in too', () => {
    const woke = whyOf(
      entry({
        outcome: 'resumed',
        tier: 2,
        rule: 'interrupted_task',
        verdict: 'resume',
        task_id: 't1',
        task_title: 'Prepare the Q4 checklist',
        reason: 'interrupted_task → resume (attempt 1): the checklist was half done',
      }),
      NOW,
    );
    expect(woke).toEqual({
      tone: 'blue',
      headline: 'Woke: interrupted task “Prepare the Q4 checklist” — resumed (attempt 1)',
      detail: 'Pulse: the checklist was half done',
    });
    expect(
      whyOf(
        entry({
          outcome: 'resumed',
          rule: 'interrupted_task',
          task_title: 'Deploy',
          reason: 'interrupted_task → resume: restart fast path: interrupted with a checkpoint, no attempts yet',
        }),
        NOW,
      ),
    ).toMatchObject({ headline: 'Woke: interrupted task “Deploy” — resumed', detail: 'Restart fast path: interrupted with a checkpoint, no attempts yet' });
    expect(whyOf(entry({ outcome: 'resumed', rule: 'follow_up_reminder', reason: 'follow_up_reminder → resume: (no reason)' }), NOW)).toMatchObject({
      headline: 'Woke: your reminder — resumed',
      detail: null,
    });
    expect(
      whyOf(entry({ outcome: 'settled', tier: 2, task_title: 'Deploy', reason: 'the resume ended failed (approval_expired); cooldown 10 min' }), NOW),
    ).toEqual({ tone: 'coral', headline: 'Resume of “Deploy” ended failed (approval expired)', detail: 'Cooldown 10 min' });
    expect(
      whyOf(
        entry({
          outcome: 'checked_in',
          tier: 1,
          verdict: 'ask_user',
          rule: 'approval_expired',
          task_title: 'Deploy',
          reason: 'approval_expired → ask_user: needs the API key',
        }),
        NOW,
      ),
    ).toMatchObject({ tone: 'amber', headline: 'Asked you about “Deploy”', detail: 'Pulse: needs the API key' });
    expect(
      whyOf(entry({ outcome: 'checked_in', task_title: 'Deploy', reason: 'exhausted: “Deploy” used its 3 attempts (last error: upstream down)' }), NOW).detail,
    ).toBe('“Deploy” used its 3 attempts (last error: upstream down)');
  });

  it('verdicts, shadow and triage modes, errors and a person’s actions', () => {
    expect(
      whyOf(
        entry({
          outcome: 'verdict',
          tier: 1,
          rule: 'retryable_failure',
          verdict: 'idle',
          task_title: 'Sync',
          reason: 'retryable_failure → idle: the provider is still down',
        }),
        NOW,
      ),
    ).toMatchObject({
      headline: 'Checked task that failed on a passing error “Sync”: nothing to do now',
      detail: 'Pulse: the provider is still down',
    });
    expect(
      whyOf(
        entry({ outcome: 'verdict', rule: 'orphan_working', verdict: 'wait', task_title: 'Sync', reason: 'orphan_working → wait: another run may finish it' }),
        NOW,
      ).headline,
    ).toBe('Checked task left without a run “Sync”: not yet — it waits');
    expect(
      whyOf(
        entry({
          outcome: 'verdict',
          mode: 'shadow',
          rule: 'interrupted_task',
          verdict: 'resume',
          task_title: 'Sync',
          reason: 'interrupted_task → shadow (logged only): would resume: safe to go on',
        }),
        NOW,
      ),
    ).toMatchObject({ headline: 'Pulse would resume: interrupted task “Sync”', detail: 'Pulse: safe to go on · Shadow mode: logged only, nothing done.' });
    expect(
      whyOf(entry({ outcome: 'candidate', mode: 'triage', rule: 'stale_streaming', reason: 'stale_streaming: Summarise the tickets' }), NOW).headline,
    ).toBe('Found: reply that stalled mid-stream');
    expect(
      whyOf(entry({ outcome: 'pulse_error', tier: 1, reason: 'pulse failed (timeout), 2 in a row: no resume', error: 'the pulse took longer than 8 s' }), NOW),
    ).toMatchObject({
      tone: 'coral',
      headline: 'The pulse model failed: no resume',
    });
    expect(
      whyOf(entry({ outcome: 'claim_lost', rule: 'interrupted_task', task_title: 'Sync', reason: 'interrupted_task: claim lost — the task changed' }), NOW),
    ).toMatchObject({
      headline: 'Did not resume interrupted task “Sync”',
      detail: 'Claim lost — the task changed',
    });
    expect(
      whyOf(entry({ outcome: 'set_aside', reason: "a person's message came first: the queued resume was set aside, its attempt refunded" }), NOW).detail,
    ).toBe('Your message came first: the queued resume was set aside, its attempt refunded');
    expect(whyOf(entry({ outcome: 'disabled', reason: 'heartbeat switched off by a person' }), NOW)).toEqual({
      tone: 'gray',
      headline: 'Heartbeat switched off by you',
      detail: null,
    });
    expect(
      whyOf(
        entry({ outcome: 'disabled', tier: 1, reason: '3 pulse errors in a row (last: connection refused); switch it on again when the pulse model answers' }),
        NOW,
      ),
    ).toMatchObject({ tone: 'coral', headline: 'Heartbeat switched itself off' });
    expect(whyOf(entry({ outcome: 'reset', reason: 'Check now: attempts and check-ins reset by a person' }), NOW).headline).toBe(
      'Check now: attempts and check-ins reset by you',
    );
  });

  it('helpers: the reason after its rule, the reader’s words, durations, the newest verdict, the state', () => {
    expect(reasonTail('interrupted_task → resume (attempt 2): go on')).toBe('go on');
    expect(reasonTail('quiet_hours: quiet hours 22:00–08:00 (Europe/Paris)')).toBe('quiet hours 22:00–08:00 (Europe/Paris)');
    expect(reasonTail('heartbeat switched on by a person')).toBe('heartbeat switched on by a person');
    expect(forReader('a person was active; the person has not answered; waits for the person', NOW)).toBe(
      'you were active; you have not answered; waits for you',
    );
    expect([seconds(45), seconds(300), seconds(3600), seconds(5400)]).toEqual(['45 s', '5 min', '1 h', '1 h 30 min']);

    const log = [
      entry({ outcome: 'checked_in', bot_id: 'b1', verdict: null, reason: 'I need the launch date' }),
      entry({ outcome: 'resumed', bot_id: 'b1', verdict: 'resume', tier: 2, at: NOW - 1000, reason: 'interrupted_task → resume (attempt 1): cut off' }),
      entry({ outcome: 'verdict', bot_id: 'b2', verdict: 'idle', reason: 'interrupted_task → idle: nothing' }),
    ];
    expect(lastVerdict(log, 'b1')).toEqual({ verdict: 'resume', reason: 'cut off', at: NOW - 1000 });
    expect(lastVerdict(log, 'b3')).toBeNull();

    const hb = { enabled: true, mode: 'resume', checking: false, state: 'idle', cooldown_until: null } as unknown as BotHeartbeat;
    expect(stateOf(hb, NOW).text).toBe('On');
    expect(stateOf({ ...hb, checking: true }, NOW)).toMatchObject({ text: 'Checking in… (a pulse is in flight)', pulse: true });
    expect(stateOf({ ...hb, state: 'cooldown', cooldown_until: NOW + 60_000 }, NOW, 1).text).toBe('Waiting for you');
    expect(stateOf({ ...hb, state: 'cooldown', cooldown_until: NOW + 60_000 }, NOW).text).toMatch(/^Resting after a resume until /);
    expect(stateOf({ ...hb, enabled: false }, NOW).text).toBe('Off for this bot');
    expect(stateOf({ ...hb, mode: 'off' }, NOW).text).toBe('Off for all bots (mode off)');
    expect(stateOf(hb, NOW, 0, true).text).toBe('Not running in this daemon');
  });

  it('whether the heartbeat runs at all in this daemon', () => {
    const w = { enabled: true, disabled_by: null, halted: false, halt_reason: null, optional_models_unavailable: [] };
    expect(worldNote(undefined)).toBeNull();
    expect(worldNote(w)).toBeNull();
    expect(worldNote({ ...w, enabled: false, disabled_by: '[worlds.heartbeat] enabled = false in subconscious.toml' })).toEqual({
      off: true,
      text: 'The heartbeat does not run in this daemon: `[worlds.heartbeat] enabled = false` in subconscious.toml. No bot is checked. Switch it on in Settings on the Subconscious tab: it applies at once.',
    });
    expect(worldNote({ ...w, enabled: false })?.text).toMatch(/^The heartbeat world is switched off \(on the Subconscious tab\)/);
    expect(worldNote({ ...w, halted: true, halt_reason: 'rate cap: 60 ticks in an hour' })).toEqual({
      off: true,
      text: 'The heartbeat is halted: rate cap: 60 ticks in an hour. Lift the halt on the Subconscious tab.',
    });
    expect(worldNote({ ...w, optional_models_unavailable: [{ role: 'local', reason: 'connection refused' }] })).toEqual({
      off: false,
      text: 'The local model did not answer at the last check (connection refused); pulses on it fail until it does.',
    });
  });
});
