/**
 * Live settings on every worker (issue 23): two daemons on one Postgres, each with its own
 * workspace and subconscious.toml. A value changed on A through `subconscious.config_set` reaches
 * B through the cluster event feed: B checks it, writes it to its own file (keeping its comments),
 * applies it (status, the effective configuration) and says so with its own `config.changed`
 * (`adopted`), which A does not adopt back. A world's `enabled` travels the same way. Two workers
 * sharing one workspace: the other finds the value in the file already and does not write it again.
 * A hand edit of one worker's file travels the same way.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/cli/daemon.js';
import { createApp } from '../../src/app/app.js';
import { silentLogger } from '../../src/core/index.js';
import type { EffectiveConfig, ProductEvents, StatusResult } from '../../src/protocol/index.js';
import { unreachableBaseUrl } from '../support/model-server.js';
import { TEST_PG_URL, openTestStore, postgresReachable, type TestStore } from '../support/stores.js';

const pg = await postgresReachable();
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FILE_B = ['# worker B: keep this', '[worlds.steering]', 'interval_minutes = 30 # B had its own', ''].join('\n');

async function daemonOn(env: Record<string, string>, config: string): Promise<Daemon> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-cluster-config-'));
  writeFileSync(path.join(workspace, 'subconscious.toml'), config);
  const daemon = await startDaemon({ workspace, port: 0, log: silentLogger, env: { ...env, SUBCONSCIOUS_TOKEN: '' } });
  cleanups.push(async () => {
    await daemon.stop();
    rmSync(workspace, { recursive: true, force: true });
  });
  return daemon;
}

type Changed = ProductEvents['config.changed'];

/** The next `config.changed` this daemon's own bus emits that matches. */
function nextChange(d: Daemon, match: (c: Changed) => boolean): Promise<Changed> {
  return new Promise((resolve) => {
    const off = d.app.events.subscribe((e) => {
      if (e.type !== 'config.changed' || !match(e.data as Changed)) return;
      off();
      resolve(e.data as Changed);
    });
  });
}

describe.skipIf(!pg)('a live setting on two workers on one Postgres', () => {
  let store: TestStore;
  let a: Daemon;
  let b: Daemon;
  const steering = async (d: Daemon) => ((await d.app.rpc.call('subconscious.status', {})) as StatusResult).instances.find((i) => i.world === 'steering')!;
  const value = async (d: Daemon, key: string) => ((await d.app.rpc.call('subconscious.config', {})) as EffectiveConfig).values.find((v) => v.key === key)!;
  const fileOf = (d: Daemon) => readFileSync(path.join(d.app.workspace, 'subconscious.toml'), 'utf8');

  beforeAll(async () => {
    store = await openTestStore('postgres');
    cleanups.push(() => store.dispose());
    const schema = /#(.+)$/.exec(store.location)![1]!;
    const nowhere = await unreachableBaseUrl();
    const env = {
      SUBCONSCIOUS_LOCAL_BASE_URL: nowhere,
      SUBCONSCIOUS_AGENT_BASE_URL: nowhere,
      SUBCONSCIOUS_LOCAL_MODEL: 'm',
      SUBCONSCIOUS_AGENT_MODEL: 'm',
      SUBCONSCIOUS_DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    };
    a = await daemonOn(env, '');
    b = await daemonOn(env, FILE_B);
  });

  it('an interval set on A is in effect on B, written to its file, and not adopted back by A', async () => {
    const adoptedByB = nextChange(b, (c) => c.adopted === true && c.key === 'worlds.steering.interval_minutes');
    const seenOnA: Changed[] = [];
    const offA = a.app.events.subscribe((e) => {
      if (e.type === 'config.changed') seenOnA.push(e.data as Changed);
    });
    await a.app.rpc.call('subconscious.config_set', { key: 'worlds.steering.interval_minutes', value: 45 });
    expect(await adoptedByB).toEqual({ key: 'worlds.steering.interval_minutes', value: 45, worker: b.app.coordinator.workerId, adopted: true });
    expect((await steering(b)).interval_minutes).toBe(45);
    expect(await value(b, 'worlds.steering.interval_minutes')).toMatchObject({ value: 45, source: 'file', editable: true });
    expect(fileOf(b)).toBe(FILE_B.replace('interval_minutes = 30 #', 'interval_minutes = 45 #'));
    expect(fileOf(a)).toBe('[worlds.steering]\ninterval_minutes = 45\n');
    // A emitted only its own change: B's adopted one reaches A's feed, A leaves it.
    await a.app.feed.settled();
    offA();
    expect(seenOnA).toEqual([{ key: 'worlds.steering.interval_minutes', value: 45, worker: a.app.coordinator.workerId }]);
    expect((await steering(a)).interval_minutes).toBe(45);
  });

  it('a world switched off on B stops on A too, and switched on again there it is on for both', async () => {
    const offOnA = nextChange(a, (c) => c.adopted === true && c.key === 'worlds.steering.enabled' && c.value === false);
    await b.app.rpc.call('subconscious.config_set', { key: 'worlds.steering.enabled', value: false });
    await offOnA;
    for (const d of [a, b]) {
      expect(await steering(d)).toMatchObject({ enabled: false, disabled_by: '[worlds.steering] enabled = false in subconscious.toml' });
      expect(await value(d, 'worlds.steering.enabled')).toMatchObject({ value: false, source: 'file' });
    }
    expect(fileOf(a)).toBe('[worlds.steering]\ninterval_minutes = 45\nenabled = false\n');

    const onOnB = nextChange(b, (c) => c.adopted === true && c.key === 'worlds.steering.enabled' && c.value === true);
    await a.app.rpc.call('subconscious.config_set', { key: 'worlds.steering.enabled', value: true });
    await onOnB;
    for (const d of [a, b]) expect(await steering(d)).toMatchObject({ enabled: true, disabled_by: null });
    expect(fileOf(b)).toContain('enabled = true');
  });

  it("a hand edit of A's file reaches B as a config_set would, and B's own write is not read back as another change", async () => {
    const adoptedByB = nextChange(b, (c) => c.adopted === true && c.key === 'worlds.steering.interval_minutes' && c.value === 50);
    const seenOnB: Changed[] = [];
    const offB = b.app.events.subscribe((e) => {
      if (e.type === 'config.changed') seenOnB.push(e.data as Changed);
    });
    const fileA = path.join(a.app.workspace, 'subconscious.toml');
    writeFileSync(`${fileA}.new`, fileOf(a).replace('interval_minutes = 45', 'interval_minutes = 50'));
    renameSync(`${fileA}.new`, fileA);
    await adoptedByB;
    expect((await steering(a)).interval_minutes).toBe(50);
    expect((await steering(b)).interval_minutes).toBe(50);
    expect(fileOf(b)).toContain('interval_minutes = 50 # B had its own');
    // B's watcher reads the file B wrote: nothing differs from what B runs with, so nothing more is said.
    await b.app.configWatcher.check();
    await b.app.feed.settled();
    offB();
    expect(seenOnB).toEqual([{ key: 'worlds.steering.interval_minutes', value: 50, worker: b.app.coordinator.workerId, adopted: true }]);
  });
});

describe.skipIf(!pg)('two workers sharing one workspace on one Postgres', () => {
  it('the other worker applies the change without writing the file again', async () => {
    const store = await openTestStore('postgres');
    cleanups.push(() => store.dispose());
    const file = path.join(store.workspace, 'subconscious.toml');
    writeFileSync(file, FILE_B);
    const nowhere = await unreachableBaseUrl();
    const env = { SUBCONSCIOUS_LOCAL_BASE_URL: nowhere, SUBCONSCIOUS_AGENT_BASE_URL: nowhere };
    const a = await createApp({ workspace: store.workspace, store: await store.reopen(), log: silentLogger, env });
    cleanups.push(() => a.close());
    const b = await createApp({ workspace: store.workspace, store: await store.reopen(), log: silentLogger, env });
    cleanups.push(() => b.close());
    const adopted = new Promise<void>((resolve) =>
      b.events.subscribe((e) => {
        if (e.type === 'config.changed' && (e.data as Changed).adopted) resolve();
      }),
    );
    await a.rpc.call('subconscious.config_set', { key: 'worlds.steering.max_output_tokens', value: 300 });
    const written = statSync(file).ino;
    await adopted;
    // A replaced the file (a new inode); B left that one as it was.
    expect(statSync(file).ino).toBe(written);
    expect(readFileSync(file, 'utf8')).toBe(
      `${FILE_B}`.replace('interval_minutes = 30 # B had its own\n', 'interval_minutes = 30 # B had its own\nmax_output_tokens = 300\n'),
    );
    const shown = ((await b.rpc.call('subconscious.config', {})) as EffectiveConfig).values.find((v) => v.key === 'worlds.steering.max_output_tokens')!;
    expect(shown).toMatchObject({ value: 300, source: 'file' });
  });
});
