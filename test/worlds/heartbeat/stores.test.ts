/**
 * The heartbeat's tables on both dialects: the schedule's compare-and-set beside markers, the
 * log (folded repeats, the newest 200 kept store-wide), check-ins (50 pending), follow-ups (20 per bot), budgets
 * reserved by one conditional write (racing reservations never pass a limit), stored settings
 * checked again on read, and the migration down and up.
 */
import { CompiledQuery, type Kysely, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/index.js';
import { applyMigrations, tablesView } from '../../../src/store/index.js';
import { heartbeatConfig, heartbeatMigrations, type HeartbeatTables } from '../../../src/worlds/heartbeat/index.js';
import { BotStateStore } from '../../../src/worlds/heartbeat/bot-state.js';
import { BudgetStore, GLOBAL_SCOPE } from '../../../src/worlds/heartbeat/budget-store.js';
import { CheckinStore } from '../../../src/worlds/heartbeat/checkin-store.js';
import { FollowUpStore } from '../../../src/worlds/heartbeat/followup-store.js';
import { LogStore } from '../../../src/worlds/heartbeat/log-store.js';
import { SETTINGS_MAX_AGE_ALONE_MS, SETTINGS_MAX_AGE_MS, SettingsStore } from '../../../src/worlds/heartbeat/settings.js';
import { openTestStore, testDialects, type TestStore } from '../../support/stores.js';

describe.each(await testDialects())('heartbeat stores on %s', (dialect) => {
  let store: TestStore;
  let db: Kysely<HeartbeatTables>;
  let clock: FakeClock;
  beforeEach(async () => {
    store = await openTestStore(dialect);
    await applyMigrations(store.db, store.dialect, heartbeatMigrations);
    db = tablesView<HeartbeatTables>(store.db);
    clock = new FakeClock();
  });
  afterEach(async () => {
    await store.dispose();
  });

  // SQLite's plan (Postgres plans by its statistics, which a test's few rows do not have).
  if (dialect === 'sqlite')
    it('bots: the persona lines read on an index (a quiet tick every 5 minutes), never by scanning every bot', async () => {
      const nodes: RootOperationNode[] = [];
      const recorder: KyselyPlugin = {
        transformQuery: (args) => (nodes.push(args.node), args.node),
        transformResult: async (args) => args.result,
      };
      const bots = new BotStateStore({ db: db.withPlugin(recorder), clock });
      for (let i = 0; i < 20; i++) await bots.ensure(`b${i}`, `t${i}`);
      await bots.update('b3', { follow_ups_enabled: 0 });
      await bots.update('b4', { enabled: 0 });
      nodes.length = 0;
      expect(await bots.followUpOverrides()).toEqual(new Map([['b3', false]]));
      expect(await bots.disabled()).toEqual(['b4']);
      expect(nodes).toHaveLength(2);
      for (const node of nodes) {
        const q = db.getExecutor().compileQuery(node, { queryId: 'plan' });
        const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${q.sql}`, [...q.parameters]));
        const details = plan.rows.map((r) => r.detail).join(' | ');
        expect(details, q.sql).toMatch(/SEARCH heartbeat_bots USING (COVERING )?INDEX/);
        expect(details, q.sql).not.toMatch(/SCAN heartbeat_bots/);
      }
    });

  it('bots: NULL next check means asleep; a marker wakes it (the earlier time wins, never inside a backoff); the tick’s write loses to a marker that came in between', async () => {
    const bots = new BotStateStore({ db, clock });
    const now = clock.now();
    const row = await bots.ensure('b1', 't1');
    expect(row).toMatchObject({ enabled: 1, next_heartbeat_at: null, state: 'idle', thread_id: 't1' });
    expect(await bots.due(now, 10)).toEqual([]);
    await bots.mark('b1', now + 60_000);
    await bots.mark('b1', now + 120_000);
    expect(Number((await bots.get('b1'))!.next_heartbeat_at)).toBe(now + 60_000);
    await bots.update('b1', { backoff_until: now + 600_000 });
    await bots.mark('b1', now);
    expect(Number((await bots.get('b1'))!.next_heartbeat_at)).toBe(now + 60_000);
    await bots.update('b1', { backoff_until: null, next_heartbeat_at: null });
    await bots.mark('b1', now);
    expect((await bots.due(now, 10)).map((r) => r.bot_id)).toEqual(['b1']);

    // The tick read version v, then a marker came: its "asleep" does not erase the marker's time.
    const v = Number((await bots.get('b1'))!.version);
    await bots.mark('b1', now + 5000);
    await bots.schedule('b1', v, null, { last_outcome: 'skipped: nothing_unfinished' });
    const after = (await bots.get('b1'))!;
    expect(after.last_outcome).toBe('skipped: nothing_unfinished');
    expect(Number(after.next_heartbeat_at)).toBe(now);
    // Without anything in between, the tick's write stands.
    await bots.schedule('b1', Number(after.version), null);
    expect((await bots.get('b1'))!.next_heartbeat_at).toBeNull();
    // A switched-off bot stays asleep.
    await bots.update('b1', { enabled: 0 });
    await bots.mark('b1', now);
    expect((await bots.get('b1'))!.next_heartbeat_at).toBeNull();
  });

  it('the log: a repeated skip folds; anything else breaks the fold; the newest 200 are kept across all bots (seed 2 §10.2), in the order they were written; a re-run id writes nothing', async () => {
    const bots = new BotStateStore({ db, clock });
    const log = new LogStore({ db, clock });
    await bots.ensure('b1');
    const skip = (id: string) =>
      log.add({ id, botId: 'b1', mode: 'resume', tier: 0, outcome: 'skipped', skip: 'user_active', reason: 'user_active: typing\nFOLLOWUP: x' });
    await skip('a');
    await clock.advance(1000);
    const again = await skip('b');
    expect(again?.repeat).toBe(true);
    expect(again?.entry).toMatchObject({ id: 'a', repeats: 2 });
    expect(again?.entry.reason).not.toMatch(/\n|FOLLOWUP:/);
    await log.add({ id: 'c', botId: 'b1', mode: 'resume', tier: 1, outcome: 'verdict', verdict: 'idle', reason: 'r'.repeat(500) });
    expect((await log.list({ botId: 'b1', limit: 10 }))[0]!.reason.length).toBe(200);
    expect((await skip('d'))?.repeat).toBe(false);
    expect(await log.add({ id: 'c', botId: 'b1', mode: 'resume', tier: 1, outcome: 'verdict', reason: 'again' })).toBeNull();
    for (let i = 0; i < 230; i++) {
      await log.add({ id: `e${i}`, botId: 'b1', mode: 'resume', tier: 1, outcome: 'verdict', verdict: 'idle', reason: `n${i}` });
    }
    const kept = await log.list({ botId: 'b1', limit: 200 });
    expect(kept).toHaveLength(200);
    expect(kept[0]!.reason).toBe('n229');
    expect(await db.selectFrom('heartbeat_log').select('id').where('bot_id', '=', 'b1').execute()).toHaveLength(200);

    // Two more bots and store-wide entries, written in the same millisecond: the cap is overall,
    // so b1's older entries give way and the whole log stays at 200, the newest 200 written.
    await bots.ensure('b2');
    await bots.ensure('b3');
    const written: string[] = [];
    for (let i = 0; i < 150; i++) {
      const botId = i % 3 === 0 ? 'b2' : i % 3 === 1 ? 'b3' : null;
      await log.add({ id: `m${i}`, botId, mode: 'resume', tier: 1, outcome: 'verdict', verdict: 'idle', reason: `m${i}` });
      written.push(`m${i}`);
    }
    const all = await db.selectFrom('heartbeat_log').select('id').execute();
    expect(all).toHaveLength(200);
    const newest = [...written.reverse(), ...Array.from({ length: 50 }, (_, i) => `e${229 - i}`)];
    expect((await log.list({ limit: 500 })).map((e) => e.id)).toEqual(newest);
    expect(await log.list({ botId: 'b1', limit: 500 })).toHaveLength(50);
    expect(await log.list({ botId: 'b2', limit: 500 })).toHaveLength(50);
  });

  it('check-ins: created once per id; at most 50 wait (the oldest are superseded); resolved once', async () => {
    const checkins = new CheckinStore({ db, clock });
    const add = (i: number) =>
      checkins.add({ id: `c${i}`, botId: `b${i % 3}`, threadId: `t${i % 3}`, taskId: `task${i}`, source: 'ask_user', question: `q${i}` });
    expect(await add(0)).toBeDefined();
    expect(await add(0)).toBeUndefined();
    for (let i = 1; i < 55; i++) {
      await clock.advance(1);
      await add(i);
    }
    const pending = await checkins.pending({ limit: 100 });
    expect(pending).toHaveLength(50);
    expect(pending[0]!.id).toBe('c5');
    expect((await checkins.get('c0'))!.state).toBe('superseded');
    const counts = await checkins.counts();
    expect(counts.reduce((n, c) => n + c.count, 0)).toBe(50);
    expect(await checkins.resolve('c10', 'answered')).toMatchObject({ state: 'answered' });
    expect(await checkins.resolve('c10', 'dismissed')).toBeUndefined();
    expect((await checkins.resolveWhere({ threadId: 't1' }, 'answered')).every((c) => c.thread_id === 't1')).toBe(true);
  });

  it('check-ins a person resolved lately: answered in the thread or through a face, newest first; the heartbeat’s own resolutions are not among them', async () => {
    const checkins = new CheckinStore({ db, clock });
    for (const id of ['thread', 'mcp', 'page', 'cancelled', 'pending'])
      await checkins.add({ id, botId: id === 'page' ? 'b2' : 'b1', threadId: 't1', taskId: null, source: 'blocked', question: id });
    await clock.advance(1000);
    await checkins.resolve('thread', 'answered');
    await clock.advance(1000);
    await checkins.resolve('mcp', 'dismissed', { by: 'Claude Desktop', via: 'mcp' });
    await clock.advance(1000);
    await checkins.resolve('page', 'superseded', { by: 'you', via: 'page' });
    await checkins.resolve('cancelled', 'cancelled');
    const lately = await checkins.answeredLately();
    expect(lately.map((c) => [c.id, c.state, c.answered_by, c.answered_via])).toEqual([
      ['page', 'superseded', 'you', 'page'],
      ['mcp', 'dismissed', 'Claude Desktop', 'mcp'],
      ['thread', 'answered', null, null],
    ]);
    expect((await checkins.answeredLately({ botIds: ['b2'] })).map((c) => c.id)).toEqual(['page']);
    expect(await checkins.answeredLately({ botIds: [] })).toEqual([]);
    expect((await checkins.answeredLately({ limit: 1 })).map((c) => c.id)).toEqual(['page']);
  });

  it('follow-ups: at most 20 pending per bot (the oldest cleared); a compare-and-set fires one once', async () => {
    const f = new FollowUpStore({ db, clock });
    for (let i = 0; i < 22; i++) {
      await clock.advance(1);
      await f.add({ id: `f${i}`, botId: 'b1', threadId: 't1', taskId: null, kind: 'delay', origin: 'bot', note: `n${i}`, dueAt: clock.now() + 60_000 });
    }
    await f.add({ id: 'other', botId: 'b2', threadId: 't2', taskId: null, kind: 'user', origin: 'bot', note: 'x', dueAt: null });
    expect(await f.pending(['b1'])).toHaveLength(20);
    expect((await f.get('f0'))!.state).toBe('cleared');
    expect((await f.get('f1'))!.state).toBe('cleared');
    const [fire1, fire2] = await Promise.all([f.move('f5', 'pending', 'fired'), f.move('f5', 'pending', 'fired')]);
    expect([fire1, fire2].filter(Boolean)).toHaveLength(1);
    expect((await f.moveWhere({ threadId: 't2', kind: 'user' }, 'resolved')).map((x) => x.id)).toEqual(['other']);
  });

  it('budgets: reservations race and never pass the limit; a refund gives one back; a new day is a new budget', async () => {
    const b = new BudgetStore({ db, clock });
    const results = await Promise.all(Array.from({ length: 12 }, () => b.reserve('b1', '2026-01-01', 'pulses', 5)));
    expect(results.filter(Boolean)).toHaveLength(5);
    expect((await b.counts([{ scope: 'b1', day: '2026-01-01' }])).get('b1', '2026-01-01')).toEqual({ pulses: 5, resumes: 0 });
    expect((await b.counts([{ scope: 'b1', day: '2026-01-02' }])).get('b1', '2026-01-02')).toEqual({ pulses: 0, resumes: 0 });
    await b.refund('b1', '2026-01-01', 'pulses');
    expect(await b.reserve('b1', '2026-01-01', 'pulses', 5)).toBe(true);
    expect(await b.reserve('b1', '2026-01-01', 'pulses', 5)).toBe(false);
    expect(await b.reserve('b1', '2026-01-02', 'pulses', 5)).toBe(true);
    await b.add(GLOBAL_SCOPE, '2026-01-01', { pulse_input_tokens: 300, full_calls: 2, full_input_tokens: 4000 });
    await b.add(GLOBAL_SCOPE, '2026-01-01', { pulse_input_tokens: 200 });
    const [row] = await b.days(GLOBAL_SCOPE, ['2026-01-01']);
    expect(row).toMatchObject({ scope: GLOBAL_SCOPE });
    expect([Number(row!.pulse_input_tokens), Number(row!.full_calls), Number(row!.full_input_tokens)]).toEqual([500, 2, 4000]);
    await b.prune('2026-01-02');
    expect(await b.days(GLOBAL_SCOPE, ['2026-01-01'])).toEqual([]);
  });

  it('settings: the file’s values, a person’s overrides over them (null goes back), a bad stored value ignored', async () => {
    const s = new SettingsStore({ db, clock, config: heartbeatConfig.parse({ interval_seconds: 600 }), timezone: 'Europe/Paris' });
    expect(await s.global()).toMatchObject({ mode: 'resume', interval_seconds: 600, timezone: 'Europe/Paris', overridden: [] });
    expect(await s.setGlobal({ mode: 'shadow', interval_seconds: 900 })).toMatchObject({
      mode: 'shadow',
      interval_seconds: 900,
      overridden: ['interval_seconds', 'mode'],
    });
    expect(await s.setGlobal({ interval_seconds: null })).toMatchObject({ interval_seconds: 600, overridden: ['mode'] });
    await db
      .updateTable('heartbeat_settings')
      .set({ overrides: JSON.stringify({ mode: 'chaos', tick_seconds: 20, evil: 1 }) })
      .execute();
    // Written behind its back (as another process would): the cached copy holds until it is re-read.
    expect((await s.global()).overridden).toEqual(['mode']);
    expect(await s.global(0)).toMatchObject({ mode: 'resume', tick_seconds: 20, overridden: ['tick_seconds'] });
    await db.updateTable('heartbeat_settings').set({ overrides: '{not json' }).execute();
    s.invalidate();
    expect((await s.global()).overridden).toEqual([]);
    const bots = new BotStateStore({ db, clock });
    const row = await bots.ensure('b1');
    const g = await s.global();
    expect(s.forBot(row, g)).toMatchObject({ enabled: true, intervalMs: 600_000, timezone: 'Europe/Paris', overridden: [] });
    const custom = (await bots.update('b1', { interval_seconds: 120, quiet_hours: '{"enabled":true,"start":"23:00","end":"07:00"}', follow_ups_enabled: 0 }))!;
    expect(s.forBot(custom, g)).toMatchObject({
      intervalMs: 120_000,
      quietHours: { enabled: true, start: '23:00', end: '07:00' },
      followUpsEnabled: false,
      overridden: ['interval_seconds', 'quiet_hours', 'follow_ups_enabled'],
    });
  });

  it('settings are cached: a change here is in effect at once, one made elsewhere within SETTINGS_MAX_AGE_MS, and a read costs no query', async () => {
    let reads = 0;
    const counting = db.withPlugin({
      transformQuery: (a) => a.node,
      transformResult: async (a) => (reads++, a.result),
    });
    const s = new SettingsStore({ db: counting, clock, config: heartbeatConfig.parse({}), timezone: 'UTC' });
    expect((await s.global()).mode).toBe('resume');
    const first = reads;
    for (let i = 0; i < 10; i++) await s.global();
    expect(reads).toBe(first); // cached: no query
    expect((await s.setGlobal({ mode: 'shadow' })).mode).toBe('shadow');
    expect((await s.global()).mode).toBe('shadow'); // the change event's own process: at once
    // Another process changes it on the shared database.
    const other = new SettingsStore({ db, clock, config: heartbeatConfig.parse({}), timezone: 'UTC' });
    await other.setGlobal({ mode: 'triage' });
    expect((await s.global()).mode).toBe('shadow');
    await clock.advance(SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('triage');
    s.invalidate();
    await other.setGlobal({ mode: 'off' });
    expect((await s.global()).mode).toBe('off');
  });

  it('alone on the store, a copy read while alone is kept up to SETTINGS_MAX_AGE_ALONE_MS; seen not alone once, the 60-second bound again', async () => {
    let alone = true;
    const s = new SettingsStore({ db, clock, config: heartbeatConfig.parse({}), timezone: 'UTC', alone: () => alone });
    const other = new SettingsStore({ db, clock, config: heartbeatConfig.parse({}), timezone: 'UTC' });
    expect((await s.global()).mode).toBe('resume');
    await other.setGlobal({ mode: 'triage' }); // nobody else should be writing while this one is alone
    await clock.advance(SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('resume');
    await clock.advance(SETTINGS_MAX_AGE_ALONE_MS - SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('triage'); // read again at the longest bound
    await other.setGlobal({ mode: 'shadow' });
    alone = false;
    await clock.advance(SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('shadow');
    // Read while not alone, then alone again: the 60-second bound until a read made alone.
    await other.setGlobal({ mode: 'off' });
    alone = true;
    await clock.advance(SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('off');
    // Seen not alone once (between reads), a copy made alone loses its longer bound too.
    await other.setGlobal({ mode: 'resume' });
    alone = false;
    expect((await s.global()).mode).toBe('off'); // within 60 s: still the copy
    alone = true;
    await clock.advance(SETTINGS_MAX_AGE_MS);
    expect((await s.global()).mode).toBe('resume');
  });

  it('the migrations go down and up again', async () => {
    const names = Object.keys(heartbeatMigrations);
    for (const name of [...names].reverse()) await heartbeatMigrations[name]!.down!(store.db, { dialect });
    for (const name of names) await heartbeatMigrations[name]!.up(store.db, { dialect });
    expect(await db.selectFrom('heartbeat_bots').selectAll().execute()).toEqual([]);
    expect(await db.selectFrom('heartbeat_checkins').select(['answered_by', 'answered_via']).execute()).toEqual([]);
  });
});
