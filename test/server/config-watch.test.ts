/**
 * A hand edit of subconscious.toml applies without a restart (issue 23), against the real daemon
 * (`subconscious start` as a child process) on a temporary workspace, its events read over SSE:
 * an edit saved the way editors do (a new file renamed over the old one) is applied as
 * `config_set` applies it (`config.changed`, status, where the value came from); a file that does
 * not parse or validate is reported (`config.file`, `subconscious.config`'s `file_error`, one log
 * line) while the daemon keeps running on the last good settings, and the report goes when the
 * file is fixed; a key that cannot change live is listed as needing a restart; the daemon's own
 * write (`config_set`) is not read back as a second change.
 */
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type SubconsciousClient } from '../../src/client/index.js';
import type { EffectiveConfig, ProductEvents, ProductMethods, StatusResult } from '../../src/protocol/index.js';
import { runCli } from '../support/cli.js';
import { startDaemon, type TestDaemon } from '../support/daemon.js';
import { unreachableBaseUrl } from '../support/model-server.js';

const CONFIG = ['# my daemon: keep this line', '[worlds.steering]', 'interval_minutes = 30 # half an hour', ''].join('\n');
const KEY = 'worlds.steering.interval_minutes';
type Seen = { type: string; data: unknown };

describe('subconscious.toml edited by hand while the daemon runs', () => {
  let daemon: TestDaemon;
  let client: SubconsciousClient<ProductMethods, ProductEvents>;
  let stop: () => void;
  const seen: Seen[] = [];
  const waiters: Array<{ match: (e: Seen) => boolean; resolve: (e: Seen) => void }> = [];

  const file = () => path.join(daemon.workspace, 'subconscious.toml');
  /** Saved as most editors save: a new file, renamed over the old one. */
  const save = (text: string) => {
    writeFileSync(`${file()}.swp`, text);
    renameSync(`${file()}.swp`, file());
  };
  /** The next event (from now) that matches, or a failure after 10 s. */
  const next = (type: keyof ProductEvents, match: (data: never) => boolean = () => true) =>
    new Promise<Seen>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} within 10 s:\n${daemon.output()}`)), 10_000);
      waiters.push({
        match: (e) => e.type === type && match(e.data as never),
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
    });
  const config = () => daemon.rpc<EffectiveConfig>('subconscious.config');
  const steering = async () => (await daemon.rpc<StatusResult>('subconscious.status')).instances.find((i) => i.world === 'steering')!;

  beforeAll(async () => {
    const nowhere = await unreachableBaseUrl();
    daemon = await startDaemon({
      config: CONFIG,
      env: {
        SUBCONSCIOUS_LOCAL_BASE_URL: nowhere,
        SUBCONSCIOUS_AGENT_BASE_URL: nowhere,
        SUBCONSCIOUS_LOCAL_MODEL: 'm',
        SUBCONSCIOUS_AGENT_MODEL: 'm',
      },
    });
    client = createClient({ url: daemon.url, token: daemon.token });
    await new Promise<void>((connected) => {
      stop = client.subscribe(
        (e) => {
          const event = { type: e.type, data: e.data };
          seen.push(event);
          for (const w of waiters.splice(0)) {
            if (w.match(event)) w.resolve(event);
            else waiters.push(w);
          }
        },
        { onStatus: (s) => s === 'connected' && connected() },
      );
    });
  }, 60_000);

  afterAll(async () => {
    stop?.();
    await daemon?.dispose();
  });

  it('an edit saved by rename applies at once, as config_set would', async () => {
    const changed = next('config.changed', (c: ProductEvents['config.changed']) => c.key === KEY);
    const edited = CONFIG.replace('= 30', '= 45');
    save(edited);
    expect((await changed).data).toMatchObject({ key: KEY, value: 45 });
    expect((await steering()).interval_minutes).toBe(45);
    const shown = await config();
    expect(shown.values.find((v) => v.key === KEY)).toMatchObject({ value: 45, source: 'file' });
    expect(shown.file_error).toBeNull();
    expect(shown.needs_restart).toEqual([]);
    // The daemon did not write the file back.
    expect(readFileSync(file(), 'utf8')).toBe(edited);
  });

  it('a file removed and written again (as some editors save) applies once it is back', async () => {
    const changed = next('config.changed', (c: ProductEvents['config.changed']) => c.key === KEY && c.value === 40);
    const edited = CONFIG.replace('= 30', '= 40');
    unlinkSync(file());
    writeFileSync(file(), edited);
    await changed;
    expect((await steering()).interval_minutes).toBe(40);
    const restore = next('config.changed', (c: ProductEvents['config.changed']) => c.key === KEY && c.value === 45);
    save(CONFIG.replace('= 30', '= 45'));
    await restore;
  });

  it('bad TOML is reported (file, line, what), the daemon keeps the last good settings, and a fix clears it', async () => {
    const reported = next('config.file', (f: ProductEvents['config.file']) => f.error !== null);
    save('[worlds.steering\ninterval_minutes = 5\n');
    const { error } = (await reported).data as ProductEvents['config.file'];
    expect(error).toContain(file());
    expect(error).toMatch(/line 1, column \d+/);
    // The log line is written beside the event, not before it reaches this stream: wait for it.
    await expect.poll(() => daemon.output(), { timeout: 10_000 }).toContain('the daemon keeps running on the last good settings');
    // Alive, and nothing lost.
    expect((await steering()).interval_minutes).toBe(45);
    expect((await config()).file_error).toBe(error);
    // Status says it too: the page's status bar, and `subconscious status` in a terminal.
    expect((await daemon.rpc<StatusResult>('subconscious.status')).config_file).toEqual({ error, needs_restart: [] });
    const cli = await runCli(['status'], daemon.workspace);
    expect(cli.out, cli.err).toContain(`subconscious.toml has an error: ${error} — still using the last good settings`);

    const cleared = next('config.file', (f: ProductEvents['config.file']) => f.error === null);
    const changed = next('config.changed', (c: ProductEvents['config.changed']) => c.key === KEY && c.value === 20);
    save(CONFIG.replace('= 30', '= 20'));
    await cleared;
    await changed;
    expect((await config()).file_error).toBeNull();
    expect((await daemon.rpc<StatusResult>('subconscious.status')).config_file).toEqual({ error: null, needs_restart: [] });
    expect((await steering()).interval_minutes).toBe(20);
  });

  it('an unknown key or a value of the wrong type names the key, and changes nothing', async () => {
    let reported = next('config.file', (f: ProductEvents['config.file']) => f.error !== null);
    save(`${CONFIG.replace('= 30', '= 7')}intervall = 3\n`);
    expect(((await reported).data as ProductEvents['config.file']).error).toMatch(/worlds\.steering.*unknown key "intervall"/);
    expect((await steering()).interval_minutes).toBe(20);

    let cleared = next('config.file', (f: ProductEvents['config.file']) => f.error === null);
    save(CONFIG.replace('= 30', '= 20'));
    await cleared;

    reported = next('config.file', (f: ProductEvents['config.file']) => f.error !== null);
    save(CONFIG.replace('= 30', '= "soon"'));
    expect(((await reported).data as ProductEvents['config.file']).error).toContain(KEY);
    expect((await steering()).interval_minutes).toBe(20);

    cleared = next('config.file', (f: ProductEvents['config.file']) => f.error === null);
    save(CONFIG.replace('= 30', '= 20'));
    await cleared;
  });

  it('a key that cannot change live is listed as needing a restart, until it is put back', async () => {
    const listed = next('config.file', (f: ProductEvents['config.file']) => f.needs_restart.length > 0);
    save(`${CONFIG.replace('= 30', '= 20')}[engine]\ntick_timeout_minutes = 10\n`);
    expect(((await listed).data as ProductEvents['config.file']).needs_restart).toEqual(['engine.tick_timeout_minutes']);
    const shown = await config();
    expect(shown.needs_restart).toEqual(['engine.tick_timeout_minutes']);
    // Still the value the daemon started with.
    expect(shown.values.find((v) => v.key === 'engine.tick_timeout_minutes')).toMatchObject({ value: 30, source: 'default' });
    await expect.poll(() => daemon.output(), { timeout: 10_000 }).toContain('engine.tick_timeout_minutes apply at the next start');

    const gone = next('config.file', (f: ProductEvents['config.file']) => f.needs_restart.length === 0);
    save(CONFIG.replace('= 30', '= 20'));
    await gone;
  });

  it("the daemon's own write through config_set is not read back as another change", async () => {
    const from = seen.length;
    await daemon.rpc('subconscious.config_set', { key: KEY, value: 25 });
    // A hand edit after it: once that is applied, the watcher has looked at the file since the daemon's write.
    const other = next('config.changed', (c: ProductEvents['config.changed']) => c.key === 'worlds.steering.max_output_tokens');
    save(`${readFileSync(file(), 'utf8')}max_output_tokens = 300\n`);
    await other;
    const changes = seen.slice(from).filter((e) => e.type === 'config.changed');
    expect(changes.map((e) => (e.data as ProductEvents['config.changed']).key)).toEqual([KEY, 'worlds.steering.max_output_tokens']);
    expect((await steering()).interval_minutes).toBe(25);
  });
});
