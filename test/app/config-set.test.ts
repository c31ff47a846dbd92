/**
 * `subconscious.config_set` (issue 23 §8): a live setting is checked (a bad value changes nothing),
 * written to subconscious.toml as a one-key edit that keeps the rest of the file and its comments,
 * applied at once (a new interval moves the world's next tick; a world's `enabled` starts or stops
 * its ticks), and still there after a restart. The store holds the next tick, so the RPC runs on
 * both dialects.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { setTomlKey } from '../../src/app/config-edit.js';
import { FakeClock, SubconsciousError, silentLogger } from '../../src/core/index.js';
import { InstanceState } from '../../src/engine/index.js';
import type { EffectiveConfig, StatusResult } from '../../src/protocol/index.js';
import { openTestStore, testDialects, type AnyStore, type TestStore } from '../support/stores.js';

describe('the one-key TOML edit', () => {
  const file = [
    '# my settings: keep this',
    '[worlds.tasks]',
    'interval_minutes = 10 # every ten minutes',
    'workspace_ignore = [',
    '  "notes/**", # scratch',
    ']',
    '',
    '# the memory world',
    '[worlds.memory]',
    'role = "local"',
    '',
  ].join('\n');

  it('rewrites only the value of the line that sets the key, keeping its comment', () => {
    const out = setTomlKey(file, 'worlds.tasks', 'interval_minutes', 15);
    expect(out).toBe(file.replace('interval_minutes = 10 #', 'interval_minutes = 15 #'));
  });

  it('adds a key at the end of its table, and a missing table at the end of the file', () => {
    const added = setTomlKey(file, 'worlds.memory', 'interval_minutes', 30);
    expect(added).toBe(file.replace('role = "local"\n', 'role = "local"\ninterval_minutes = 30\n'));
    const table = setTomlKey(file, 'worlds.steering', 'interval_minutes', 45);
    expect(table).toBe(`${file}\n[worlds.steering]\ninterval_minutes = 45\n`);
    expect(setTomlKey('', 'worlds.tasks', 'interval_minutes', 7)).toBe('[worlds.tasks]\ninterval_minutes = 7\n');
    // A key added to a table that ends in an array goes after the array, inside the table.
    expect(setTomlKey(file, 'worlds.tasks', 'inference_enabled', false)).toContain(']\ninference_enabled = false\n\n# the memory world');
  });

  it('keeps Windows line ends', () => {
    const crlf = file.replaceAll('\n', '\r\n');
    expect(setTomlKey(crlf, 'worlds.memory', 'interval_minutes', 30)).toBe(crlf.replace('role = "local"\r\n', 'role = "local"\r\ninterval_minutes = 30\r\n'));
  });

  it('refuses a key set in a form it does not rewrite (an inline table), changing nothing', () => {
    const inline = '[worlds]\ntasks = { interval_minutes = 10 }\n';
    expect(() => setTomlKey(inline, 'worlds.tasks', 'interval_minutes', 15)).toThrow(/cannot rewrite safely/);
    const dotted = 'worlds.tasks.interval_minutes = 10\n';
    expect(() => setTomlKey(dotted, 'worlds.tasks', 'interval_minutes', 15)).toThrow(/cannot rewrite safely/);
  });
});

const dialects = await testDialects();
const FILE = ['# my daemon', '[worlds.tasks]', '# how often', 'interval_minutes = 10 # every ten minutes', '', '[worlds.steering]', 'role = "local"', ''].join(
  '\n',
);

describe.each(dialects)('subconscious.config_set on %s', (dialect) => {
  let store: TestStore;
  let app: App | undefined;
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 9, 0, 0));
  const open = async (s: AnyStore = store) => {
    app = await createApp({ workspace: store.workspace, store: s, clock, log: silentLogger, env: { SUBCONSCIOUS_LOCAL_MODEL: 'from-env' } });
    return app;
  };
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await store?.dispose();
  });
  const status = async (a: App, world: string) => ((await a.rpc.call('subconscious.status', {})) as StatusResult).instances.find((i) => i.world === world)!;
  const value = async (a: App, key: string) => ((await a.rpc.call('subconscious.config', {})) as EffectiveConfig).values.find((v) => v.key === key)!;
  const refused = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SubconsciousError);
    return err as SubconsciousError;
  };

  it('writes the key keeping the file, applies it at once (the next tick moves), and keeps it across a restart', async () => {
    store = await openTestStore(dialect);
    const file = path.join(store.workspace, 'subconscious.toml');
    writeFileSync(file, FILE);
    let a = await open();
    // The tasks world last ticked at 9:00: its next tick is at 9:10.
    await new InstanceState(store.db, () => clock.now()).setMany('tasks', { last_tick_at: clock.now(), next_tick_at: clock.now() + 10 * 60_000 });
    expect(await value(a, 'worlds.tasks.interval_minutes')).toMatchObject({ value: 10, source: 'file', editable: true });
    expect(await value(a, 'worlds.memory.interval_minutes')).toMatchObject({ value: 15, source: 'default', editable: true });
    // Not live, or set by the environment (it wins over the file): not editable.
    expect(await value(a, 'worlds.tasks.log_retention_days')).toMatchObject({ editable: false });
    expect(await value(a, 'models.local.model')).toMatchObject({ source: 'environment', editable: false });

    const changed: string[] = [];
    a.events.subscribe((e) => {
      if (e.type === 'config.changed') changed.push((e.data as { key: string }).key);
    });
    const result = (await a.rpc.call('subconscious.config_set', { key: 'worlds.tasks.interval_minutes', value: 30 })) as { value: { value: unknown } };
    expect(result.value).toMatchObject({ key: 'worlds.tasks.interval_minutes', value: 30, source: 'file', editable: true });
    expect(changed).toEqual(['worlds.tasks.interval_minutes']);
    expect(readFileSync(file, 'utf8')).toBe(FILE.replace('interval_minutes = 10 #', 'interval_minutes = 30 #'));
    // Applied now: status says the new cadence, and the next tick is the last one + 30 min.
    const tasks = await status(a, 'tasks');
    expect(tasks.interval_minutes).toBe(30);
    expect(tasks.next_tick_at).toBe(clock.now() + 30 * 60_000);
    // A key the file did not hold is added to its table.
    await a.rpc.call('subconscious.config_set', { key: 'worlds.steering.interval_minutes', value: 45 });
    expect(readFileSync(file, 'utf8')).toContain('[worlds.steering]\nrole = "local"\ninterval_minutes = 45\n');
    expect((await status(a, 'steering')).interval_minutes).toBe(45);

    await a.close();
    app = undefined;
    a = await open(await store.reopen());
    expect(await value(a, 'worlds.tasks.interval_minutes')).toMatchObject({ value: 30, source: 'file' });
    expect((await status(a, 'tasks')).interval_minutes).toBe(30);
    expect((await status(a, 'tasks')).next_tick_at).toBe(clock.now() + 30 * 60_000);
  });

  it('refuses a bad value, a key that needs a restart and an unknown key, changing nothing', async () => {
    store = await openTestStore(dialect);
    const file = path.join(store.workspace, 'subconscious.toml');
    writeFileSync(file, FILE);
    const a = await open();
    const low = await refused(a.rpc.call('subconscious.config_set', { key: 'worlds.tasks.interval_minutes', value: 2 }));
    expect(low.code).toBe('invalid_params');
    expect(low.message).toContain('worlds.tasks.interval_minutes: must be at least 5');
    // Over the wire, the error's data names the key and the reason (the page shows them).
    const wire = (await a.rpc.handle({
      jsonrpc: '2.0',
      id: 1,
      method: 'subconscious.config_set',
      params: { key: 'worlds.tasks.interval_minutes', value: 2 },
    })) as {
      error: { data: Record<string, unknown> };
    };
    expect(wire.error.data).toMatchObject({ code: 'invalid_params', key: 'worlds.tasks.interval_minutes', reason: 'must be at least 5' });
    const kind = await refused(a.rpc.call('subconscious.config_set', { key: 'worlds.tasks.interval_minutes', value: 'often' }));
    expect(kind.code).toBe('invalid_params');
    const restart = await refused(a.rpc.call('subconscious.config_set', { key: 'worlds.tasks.log_retention_days', value: 3 }));
    expect(restart.code).toBe('forbidden');
    expect(restart.message).toContain('cannot be changed while the daemon runs');
    const env = await refused(a.rpc.call('subconscious.config_set', { key: 'models.local.model', value: 'other' }));
    expect(env.code).toBe('forbidden');
    const unknown = await refused(a.rpc.call('subconscious.config_set', { key: 'worlds.tasks.nope', value: 3 }));
    expect(unknown.code).toBe('invalid_params');
    expect(readFileSync(file, 'utf8')).toBe(FILE);
    expect(await value(a, 'worlds.tasks.interval_minutes')).toMatchObject({ value: 10 });
    expect((await status(a, 'tasks')).interval_minutes).toBe(10);
  });
  it("a world's enabled applies at once: off, it stops ticking and says why; on, it ticks now and its switch follows", async () => {
    store = await openTestStore(dialect);
    const file = path.join(store.workspace, 'subconscious.toml');
    // Only the steering world matters here (a quiet tick needs no model): the others stay off.
    const others = ['tasks', 'heartbeat', 'conscious', 'memory'].map((w) => `[worlds.${w}]\nenabled = false\n`).join('');
    writeFileSync(file, `${others}[worlds.steering]\nenabled = false # not yet\n`);
    const a = await open();
    const ticks: string[] = [];
    const changed: unknown[] = [];
    a.events.subscribe((e) => {
      if (e.type === 'tick.finished' && (e.data as { world: string }).world === 'steering') ticks.push((e.data as { outcome: string }).outcome);
      if (e.type === 'config.changed') changed.push(e.data);
    });
    await a.start();
    expect(await status(a, 'steering')).toMatchObject({ enabled: false, disabled_by: '[worlds.steering] enabled = false in subconscious.toml' });
    expect(await value(a, 'worlds.steering.enabled')).toMatchObject({ value: false, source: 'file', editable: true });

    const on = (await a.rpc.call('subconscious.config_set', { key: 'worlds.steering.enabled', value: true })) as { value: { value: unknown } };
    expect(on.value).toMatchObject({ key: 'worlds.steering.enabled', value: true, source: 'file' });
    expect(readFileSync(file, 'utf8')).toBe(`${others}[worlds.steering]\nenabled = true # not yet\n`);
    expect(await status(a, 'steering')).toMatchObject({ enabled: true, disabled_by: null });
    expect(changed).toEqual([{ key: 'worlds.steering.enabled', value: true, worker: a.coordinator.workerId }]);
    // It ticks now, not after a restart.
    await expect.poll(() => ticks.length).toBeGreaterThan(0);
    expect((await status(a, 'steering')).last_tick_at).toBe(clock.now());

    await a.rpc.call('subconscious.config_set', { key: 'worlds.steering.enabled', value: false });
    expect(readFileSync(file, 'utf8')).toBe(`${others}[worlds.steering]\nenabled = false # not yet\n`);
    const off = await status(a, 'steering');
    expect(off).toMatchObject({ enabled: false, disabled_by: '[worlds.steering] enabled = false in subconscious.toml' });
    const runNow = await refused(a.rpc.call('subconscious.trigger', { world: 'steering' }));
    expect(runNow.code).toBe('world_off');
    expect(runNow.message).toContain('set enabled = true under [worlds.steering] in Settings on the Subconscious tab: it applies at once');
    // The page's own switch cannot override the file, and says where to change it.
    const locked = await refused(a.rpc.call('subconscious.set_enabled', { world: 'steering', enabled: true }));
    expect(locked.hint).toContain('Set enabled = true under [worlds.steering]');
    // Two of its intervals go by: no tick.
    const before = ticks.length;
    await clock.advance(2 * off.interval_minutes * 60_000);
    expect(ticks.length).toBe(before);
    const bad = await refused(a.rpc.call('subconscious.config_set', { key: 'worlds.steering.enabled', value: 'yes' }));
    expect(bad.message).toBe('worlds.steering.enabled: must be true or false (got "yes"); nothing was changed.');
    // A host has no tick to switch.
    expect(await value(a, 'worlds.bots.enabled')).toMatchObject({ editable: false });
  });
});
