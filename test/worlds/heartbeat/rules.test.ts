/**
 * Seed 2 §13 unit: the triage matrix (pure) — every candidate rule, every skip rule, priority,
 * the attempts cap and the terminal rule, group-thread exclusion, the restart fast path, a
 * person's "Check now".
 */
import { describe, expect, it } from 'vitest';
import type { BotApproval, Message, Task } from '../../../src/protocol/bots.js';
import { triageBot, type BotView, type Triage } from '../../../src/worlds/heartbeat/index.js';
import type { BotSettings } from '../../../src/worlds/heartbeat/settings.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const BOT = 'bot-1';
const THREAD = 'thread-1';
const fixed = () => 0.5;

const settings = (o: Partial<BotSettings> = {}): BotSettings => ({
  enabled: true,
  intervalMs: 300_000,
  quietHours: { enabled: false, start: '22:00', end: '08:00' },
  timezone: 'UTC',
  model: 'local',
  followUpsEnabled: true,
  autoResumeOnRestart: false,
  maxPulsesPerDay: 48,
  maxResumesPerDay: 8,
  maxTaskAttempts: 3,
  overridden: [],
  ...o,
});

let seq = 0;
function task(o: Partial<Task> = {}): Task {
  seq++;
  return {
    id: `task-${seq}`,
    bot_id: BOT,
    thread_id: THREAD,
    message_id: null,
    title: `Task ${seq}`,
    source: 'user',
    from_bot_id: null,
    routine_id: null,
    status: 'failed',
    error_kind: 'interrupted',
    error: 'Interrupted when the daemon restarted.',
    checkpoint: null,
    interrupted: true,
    attempts: 0,
    last_heartbeat_at: null,
    claimed_by: null,
    claimed_at: null,
    review_note: null,
    version: 3,
    created_at: NOW - 600_000,
    updated_at: NOW - 300_000,
    started_at: NOW - 600_000,
    finished_at: NOW - 300_000,
    ...o,
  };
}

function msg(o: Partial<Message>): Message {
  seq++;
  return {
    id: `m-${seq}`,
    thread_id: THREAD,
    seq,
    role: 'bot',
    bot_id: BOT,
    task_id: null,
    text: 'text',
    status: 'done',
    error: null,
    interrupted: false,
    heartbeat: false,
    created_at: NOW - 400_000,
    updated_at: NOW - 400_000,
    ...o,
  };
}

function view(o: Partial<BotView> = {}): BotView {
  return {
    botId: BOT,
    threadId: THREAD,
    settings: settings(),
    backoffUntil: null,
    cooldownUntil: null,
    forced: false,
    stoppedAt: null,
    idle: true,
    tasks: [],
    orphanIds: new Set(),
    messages: [],
    userActiveAt: null,
    expiredApprovals: [],
    followUps: [],
    checkins: [],
    exhaustedAsked: new Set(),
    missingTaskIds: new Set(),
    checkinMessageIds: new Set(),
    budget: { botPulses: 0, globalPulses: 0, globalMaxPulses: 200 },
    globalTimezone: 'UTC',
    ...o,
  };
}

const triage = (v: BotView, mode: 'resume' | 'triage' | 'shadow' = 'resume'): Triage => triageBot(v, NOW, { mode, random: fixed });
const rule = (t: Triage) => (t.kind === 'candidates' ? t.primary.rule : `skip:${t.skip}`);

function followUp(
  o: Partial<{ id: string; due_at: number | null; kind: 'delay' | 'user'; origin: 'bot' | 'person'; task_id: string | null; thread_id: string }> = {},
) {
  seq++;
  return {
    id: `f-${seq}`,
    bot_id: BOT,
    thread_id: THREAD,
    task_id: null,
    kind: 'delay' as const,
    origin: 'bot' as const,
    note: 'verify the deploy',
    due_at: NOW - 1000,
    state: 'pending' as const,
    created_at: NOW - 700_000,
    updated_at: NOW - 700_000,
    ...o,
  };
}

const approval = (taskId: string, expiredAt: number): BotApproval => ({
  id: `a-${taskId}`,
  bot_id: BOT,
  thread_id: THREAD,
  task_id: taskId,
  run_id: 'r',
  tool: 'write_file',
  server: 'fs',
  arguments: {},
  reason: '',
  state: 'expired',
  created_at: expiredAt - 600_000,
  expires_at: expiredAt,
  answered_at: expiredAt,
  expired_at: expiredAt,
});

describe('triage: candidate rules', () => {
  it('rule 1 interrupted_task: failed + interrupted (restart or preempted)', () => {
    expect(rule(triage(view({ tasks: [task()] })))).toBe('interrupted_task');
    expect(rule(triage(view({ tasks: [task({ error_kind: 'preempted' })] })))).toBe('interrupted_task');
  });

  it('rule 2 orphan_working: queued/working with no live run; a live one makes the bot busy', () => {
    const t = task({ status: 'working', error_kind: null, interrupted: false, updated_at: NOW - 200_000, finished_at: null });
    expect(rule(triage(view({ tasks: [t], orphanIds: new Set([t.id]) })))).toBe('orphan_working');
    const young = triage(view({ tasks: [{ ...t, updated_at: NOW - 30_000 }] }));
    expect(young).toMatchObject({ kind: 'skip', skip: 'busy', next: NOW - 30_000 + 120_001 });
  });

  it('rule 3 interrupted_message: the bot’s newest reply was cut off and has no task', () => {
    const m = msg({ status: 'error', interrupted: true, text: 'Half an answ', task_id: null });
    const t = triage(view({ messages: [msg({ role: 'user', bot_id: null, created_at: NOW - 900_000 }), m] }));
    expect(rule(t)).toBe('interrupted_message');
    const gone = msg({ status: 'error', interrupted: true, task_id: 'deleted-task' });
    expect(rule(triage(view({ messages: [gone], missingTaskIds: new Set(['deleted-task']) })))).toBe('interrupted_message');
    // Its task exists (rule 1 covers it, or it is finished): not rule 3.
    expect(rule(triage(view({ messages: [{ ...gone }] })))).toBe('skip:nothing_unfinished');
  });

  it('rule 4 follow_up_due and rule 8 follow_up_reminder; a follow-up not yet due schedules its time', () => {
    expect(rule(triage(view({ followUps: [followUp()] })))).toBe('follow_up_due');
    expect(rule(triage(view({ followUps: [followUp({ origin: 'person' })] })))).toBe('follow_up_reminder');
    expect(triage(view({ followUps: [followUp({ due_at: NOW + 60_000 })] }))).toMatchObject({ kind: 'skip', skip: 'nothing_unfinished', next: NOW + 60_000 });
    expect(rule(triage(view({ followUps: [followUp({ kind: 'user', due_at: null })] })))).toBe('skip:nothing_unfinished');
  });

  it('rule 5 approval_expired: an approval expired after the task’s last heartbeat; not again after the next claim', () => {
    const t = task({ error_kind: 'approval_expired', interrupted: false, last_heartbeat_at: NOW - 900_000 });
    expect(rule(triage(view({ tasks: [t], expiredApprovals: [approval(t.id, NOW - 400_000)] })))).toBe('approval_expired');
    const after = { ...t, last_heartbeat_at: NOW - 100_000 };
    expect(rule(triage(view({ tasks: [after], expiredApprovals: [approval(t.id, NOW - 400_000)] })))).toBe('skip:nothing_unfinished');
  });

  it('rule 6 retryable_failure: timeout, provider, rate_limit', () => {
    for (const kind of ['timeout', 'provider', 'rate_limit'] as const) {
      expect(rule(triage(view({ tasks: [task({ error_kind: kind, interrupted: false })] })))).toBe('retryable_failure');
    }
    expect(rule(triage(view({ tasks: [task({ error_kind: 'unknown', interrupted: false })] })))).toBe('skip:nothing_unfinished');
  });

  it('rule 7 stale_streaming: a reply left streaming over 60 s with no run; younger ones are waited for', () => {
    const stale = msg({ status: 'streaming', updated_at: NOW - 90_000, task_id: null });
    expect(rule(triage(view({ messages: [stale] })))).toBe('stale_streaming');
    expect(triage(view({ messages: [{ ...stale, updated_at: NOW - 30_000 }] }))).toMatchObject({ kind: 'skip', next: NOW - 30_000 + 60_001 });
  });

  it('rule 7 reconciles, then continues: a stale reply whose task can resume is a claimable candidate of that task; one with no task asks', () => {
    const t = task({ error_kind: 'provider', interrupted: false, title: 'Draft the memo', version: 7 });
    const stale = msg({ status: 'streaming', updated_at: NOW - 90_000, task_id: t.id });
    const out = triage(view({ tasks: [t], messages: [stale] }));
    const c = out.kind === 'candidates' ? out.candidates.find((x) => x.rule === 'stale_streaming') : undefined;
    expect(c).toMatchObject({ taskId: t.id, title: 'Draft the memo', version: 7, claimable: true, messageId: stale.id });
    const alone = triage(view({ messages: [{ ...stale, task_id: null }] }));
    expect(alone.kind === 'candidates' && alone.primary).toMatchObject({ rule: 'stale_streaming', taskId: null, claimable: false });
    const spent = triage(view({ tasks: [{ ...t, attempts: 3 }], messages: [stale] }));
    expect(spent.kind === 'candidates' ? spent.candidates.find((x) => x.rule === 'stale_streaming')?.claimable : false).toBe(false);
  });

  it('priority: the first rule in order is the primary, the others follow in the digest', () => {
    const t6 = task({ error_kind: 'provider', interrupted: false });
    const t1 = task();
    const t = triage(view({ tasks: [t6, t1], followUps: [followUp()] }));
    expect(t.kind === 'candidates' && t.candidates.map((c) => c.rule)).toEqual(['interrupted_task', 'follow_up_due', 'retryable_failure']);
  });
});

describe('triage: skip rules', () => {
  const work = () => ({ tasks: [task()] });

  it('in order: disabled, quiet hours, busy, user active, backoff, waiting for the person', () => {
    expect(triage(view({ ...work(), settings: settings({ enabled: false }) }))).toMatchObject({ skip: 'disabled', next: null });
    const quiet = settings({ quietHours: { enabled: true, start: '11:00', end: '13:00' } });
    expect(triage(view({ ...work(), settings: quiet }))).toMatchObject({ skip: 'quiet_hours', next: Date.UTC(2026, 0, 1, 13, 0, 0) });
    expect(triage(view({ ...work(), idle: false }))).toMatchObject({ skip: 'busy' });
    const live = task({ status: 'working', error_kind: null });
    expect(triage(view({ tasks: [task(), live] }))).toMatchObject({ skip: 'busy' });
    expect(triage(view({ ...work(), userActiveAt: NOW - 30_000 }))).toMatchObject({ skip: 'user_active', next: NOW + 60_000 });
    expect(rule(triage(view({ ...work(), userActiveAt: NOW - 91_000 })))).toBe('interrupted_task');
    expect(triage(view({ ...work(), backoffUntil: NOW + 60_000 }))).toMatchObject({ skip: 'backoff', next: NOW + 60_000 });
    const question = msg({ text: 'Which region should I deploy to?', created_at: NOW - 10_000 });
    expect(triage(view({ ...work(), messages: [question] }))).toMatchObject({ skip: 'waiting_user', next: null });
    // A check-in's own question is not a turn of the conversation.
    expect(triage(view({ ...work(), messages: [question], checkinMessageIds: new Set([question.id]) }))).toMatchObject({ kind: 'candidates' });
  });

  it('group-thread work is never a candidate', () => {
    expect(triage(view({ tasks: [task({ thread_id: 'group-1' })] }))).toMatchObject({ skip: 'group_thread', next: null });
  });

  it('the person wrote after the work stopped, or the bot answered since: permanent skips (not for a preempted resume)', () => {
    const t = task();
    const user = msg({ role: 'user', bot_id: null, created_at: NOW - 100_000 });
    expect(triage(view({ tasks: [t], messages: [user] }))).toMatchObject({ skip: 'user_driving', next: null });
    const answered = msg({ role: 'bot', text: 'Here is the weather.', created_at: NOW - 100_000 });
    expect(triage(view({ tasks: [t], messages: [answered] }))).toMatchObject({ skip: 'superseded', next: null });
    const p = task({ error_kind: 'preempted' });
    expect(rule(triage(view({ tasks: [p], messages: [answered] })))).toBe('interrupted_task');
  });

  it('work that stopped before a person stopped the bot is never resumed', () => {
    const t = task();
    const stopped = triage(view({ tasks: [t], stoppedAt: NOW - 1000 }));
    expect(stopped).toMatchObject({ skip: 'user_driving', next: null });
    // The reason reads as a sentence a person can check against what they did.
    expect(stopped.kind === 'skip' && stopped.reason).toMatch(/the person pressed Stop after ".+" was cut off/);
    expect(rule(triage(view({ tasks: [t], stoppedAt: NOW - 900_000 })))).toBe('interrupted_task');
  });

  it('cancelled, dismissed and done work is never a candidate', () => {
    for (const status of ['cancelled', 'dismissed', 'done', 'review'] as const) {
      expect(rule(triage(view({ tasks: [task({ status })] })))).toBe('skip:nothing_unfinished');
    }
  });

  it('attempts ≥ max: one terminal check-in, then the candidate is left (asked) — never a pulse', () => {
    const t = task({ attempts: 3 });
    const first = triage(view({ tasks: [t] }));
    expect(first).toMatchObject({ kind: 'skip', skip: 'exhausted', next: null });
    expect(first.terminal.map((c) => c.id)).toEqual([t.id]);
    const asked = triage(view({ tasks: [t], exhaustedAsked: new Set([t.id]) }));
    expect(asked).toMatchObject({ skip: 'exhausted', terminal: [] });
    // Live work beside an exhausted task: it pulses, and the exhausted one gets its check-in too.
    const both = triage(view({ tasks: [t, task({ error_kind: 'provider', interrupted: false })] }));
    expect(both.kind === 'candidates' && both.terminal.map((c) => c.id)).toEqual([t.id]);
  });

  it('a pending check-in about a candidate: asked, left alone', () => {
    const t = task();
    const c = {
      id: 'c1',
      bot_id: BOT,
      thread_id: THREAD,
      task_id: t.id,
      message_id: null,
      asked_message_id: null,
      source: 'ask_user' as const,
      question: '?',
      state: 'pending' as const,
      created_at: NOW,
      resolved_at: null,
      answered_by: null,
      answered_via: null,
    };
    expect(triage(view({ tasks: [t], checkins: [c] }))).toMatchObject({ skip: 'asked', next: null });
  });

  it('a fresh claim (another worker about to dispatch) is not taken; a stale one is', () => {
    const t = task({ claimed_by: 'heartbeat', claimed_at: NOW - 60_000 });
    expect(triage(view({ tasks: [t] }))).toMatchObject({ kind: 'skip', next: NOW - 60_000 + 300_001 });
    expect(rule(triage(view({ tasks: [{ ...t, claimed_at: NOW - 301_000 }] })))).toBe('interrupted_task');
  });

  it('cooldown and budgets come after the candidates', () => {
    expect(triage(view({ ...work(), cooldownUntil: NOW + 60_000 }))).toMatchObject({ skip: 'cooldown', next: NOW + 60_000 });
    expect(triage(view({ ...work(), budget: { botPulses: 48, globalPulses: 0, globalMaxPulses: 200 } }))).toMatchObject({
      skip: 'budget',
      next: Date.UTC(2026, 0, 2),
    });
    expect(triage(view({ ...work(), budget: { botPulses: 0, globalPulses: 200, globalMaxPulses: 200 } }))).toMatchObject({ skip: 'budget' });
    // Triage mode makes no pulse: its budget does not apply.
    expect(triage(view({ ...work(), budget: { botPulses: 48, globalPulses: 0, globalMaxPulses: 200 } }), 'triage').kind).toBe('candidates');
  });

  it('a person’s Check now passes quiet hours, user activity, backoff and cooldown — never budgets or busy', () => {
    const forced = {
      ...work(),
      forced: true,
      settings: settings({ quietHours: { enabled: true, start: '11:00', end: '13:00' } }),
      userActiveAt: NOW - 1000,
      backoffUntil: NOW + 60_000,
      cooldownUntil: NOW + 60_000,
    };
    expect(triage(view(forced)).kind).toBe('candidates');
    expect(triage(view({ ...forced, budget: { botPulses: 48, globalPulses: 0, globalMaxPulses: 200 } }))).toMatchObject({ skip: 'budget' });
    expect(triage(view({ ...forced, idle: false }))).toMatchObject({ skip: 'busy' });
  });

  it('the restart fast path: resume mode, enabled, an interrupted task with a checkpoint (or partial text) and no attempts', () => {
    const on = settings({ autoResumeOnRestart: true });
    const withCheckpoint = task({ checkpoint: { summary: 'did 3 of 7', steps: [], at: NOW } });
    const fast = triage(view({ settings: on, tasks: [withCheckpoint] }));
    expect(fast.kind === 'candidates' && fast.fastPath).toBe(true);
    const partialMsg = msg({ status: 'error', interrupted: true, text: 'partial' });
    const viaPartial = task({ message_id: partialMsg.id });
    const p = triage(view({ settings: on, tasks: [viaPartial], messages: [partialMsg] }));
    expect(p.kind === 'candidates' && p.fastPath).toBe(true);
    for (const v of [
      view({ settings: on, tasks: [{ ...withCheckpoint, attempts: 1 }] }),
      view({ settings: on, tasks: [task()] }),
      view({ settings: settings(), tasks: [withCheckpoint] }),
      view({ settings: on, tasks: [{ ...withCheckpoint, error_kind: 'preempted' }] }),
    ]) {
      const t = triage(v);
      expect(t.kind === 'candidates' && t.fastPath).toBe(false);
    }
    const shadow = triage(view({ settings: on, tasks: [withCheckpoint] }), 'shadow');
    expect(shadow.kind === 'candidates' && shadow.fastPath).toBe(false);
  });
});
