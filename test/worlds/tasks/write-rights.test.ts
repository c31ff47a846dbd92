/**
 * Issue 9 §1 on the databases release 0.1.0 wrote (test/fixtures/release-0.1.0): write rights an
 * older version guessed from a title are flagged by the migration, ask before every write until
 * the person confirms or drops them, and the page's choice settles each one. HEARTBEAT.md tasks
 * keep write rights only where their line says `- [write] …`.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, RpcDispatcher, uuid } from '../../../src/core/index.js';
import { implement, tasksContract } from '../../../src/protocol/index.js';
import { TasksService, tasksRpcHandlers, writesGranted, type Task } from '../../../src/worlds/tasks/index.js';
import { TEST_PG_URL, dropSchema, openProductStore, testDialects, type AnyStore } from '../../support/stores.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/release-0.1.0/', import.meta.url));
const GUESSED = 'Check which emails I need to reply to';
const EXPLICIT_BUT_UNRECORDED = 'Send the daily digest to #team';

interface Opened {
  store: AnyStore;
  workspace: string;
  dispose(): Promise<void>;
}

/** The release's database, opened by this version (which migrates it). */
async function openRelease(dialect: 'sqlite' | 'postgres'): Promise<Opened> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-release-'));
  if (dialect === 'sqlite') {
    mkdirSync(path.join(workspace, '.subconscious'), { recursive: true, mode: 0o700 });
    copyFileSync(path.join(FIXTURES, 'release-0.1.0.sqlite'), path.join(workspace, '.subconscious', 'subconscious.db'));
    const store = await openProductStore({ workspace });
    return {
      store,
      workspace,
      dispose: async () => {
        await store.close();
        rmSync(workspace, { recursive: true, force: true });
      },
    };
  }
  const schema = `rel_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const dump = readFileSync(path.join(FIXTURES, 'release-0.1.0.pg.sql'), 'utf8')
    .split('\n')
    .filter((line) => !/^\\(un)?restrict\b/.test(line)) // psql 17's dump guard; older clients do not know it
    .join('\n')
    .replaceAll('fixture_release_010', schema);
  const loaded = spawnSync('psql', [TEST_PG_URL, '-v', 'ON_ERROR_STOP=1', '-q', '-f', '-'], { input: dump, encoding: 'utf8' });
  if (loaded.status !== 0) throw new Error(`could not load the fixture dump: ${loaded.stderr}`);
  const store = await openProductStore({ databaseUrl: TEST_PG_URL, schema, poolSize: 2 });
  return {
    store,
    workspace,
    dispose: async () => {
      await store.close();
      await dropSchema(schema);
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

let opened: Opened | undefined;
afterEach(async () => {
  await opened?.dispose();
  opened = undefined;
});

describe.each(await testDialects())('release 0.1.0 database on %s', (dialect) => {
  it('flags the guessed write rights; until the person answers they ask first; the answer settles each one', async () => {
    opened = await openRelease(dialect);
    const { store, workspace } = opened;
    // The release's HEARTBEAT.md had these two lines; the second "wrote" because of its words.
    writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '- Check the deploy queue\n- Write the weekly digest to notes.md\n');
    const service = new TasksService({ db: store.db, clock: new FakeClock(), ids: uuid, events: new EventBus(), workspace, timezone: 'UTC' });
    const rpc = new RpcDispatcher(implement(tasksContract, tasksRpcHandlers(service)));
    const tasks = async () => (await rpc.call('subconscious.tasks_list')) as Task[];
    const byTitle = async (title: string) => (await tasks()).find((t) => t.title === title)!;

    // Every user task that held write rights is flagged: nothing recorded whether a person chose them.
    const guessed = await byTitle(GUESSED);
    expect(guessed).toMatchObject({ source: 'user', needs_tools: true, write_choice: 'older_version', write_suggested: true });
    expect(await byTitle(EXPLICIT_BUT_UNRECORDED)).toMatchObject({ needs_tools: true, write_choice: 'older_version' });
    expect(writesGranted(guessed)).toBe(false); // asks before every write until answered
    for (const title of ['Summarize the release notes', 'Watch the build'])
      expect(await byTitle(title)).toMatchObject({ needs_tools: false, write_choice: 'none' });
    // HEARTBEAT.md: words grant nothing; its guessed line lost its rights.
    expect(await byTitle('Write the weekly digest to notes.md')).toMatchObject({ needs_tools: false, write_choice: 'none' });
    expect(await byTitle('Check the deploy queue')).toMatchObject({ needs_tools: false });
    // Nothing else the release stored was lost.
    expect(await tasks()).toHaveLength(9);
    expect(await service.listLog({ limit: 100 })).toHaveLength(14);

    // The person drops the guess and confirms the other: each is then theirs.
    const dropped = (await rpc.call('subconscious.tasks_update', { task_id: guessed.id, needs_tools: false })) as Task;
    expect(dropped).toMatchObject({ needs_tools: false, write_choice: 'person' });
    const digest = await byTitle(EXPLICIT_BUT_UNRECORDED);
    const confirmed = (await rpc.call('subconscious.tasks_update', { task_id: digest.id, needs_tools: true })) as Task;
    expect(confirmed).toMatchObject({ needs_tools: true, write_choice: 'person' });
    expect(writesGranted(confirmed)).toBe(true);
    // A marked line asks for them; they are granted once the person confirms.
    writeFileSync(path.join(workspace, 'HEARTBEAT.md'), '- Check the deploy queue\n- [write] Write the weekly digest to notes.md\n');
    const asking = await byTitle('Write the weekly digest to notes.md');
    expect(asking).toMatchObject({ needs_tools: true, write_choice: 'heartbeat_md' });
    expect(writesGranted(asking)).toBe(false);
    const yes = (await rpc.call('subconscious.tasks_update', { task_id: asking.id, needs_tools: true })) as Task;
    expect(yes).toMatchObject({ needs_tools: true, write_choice: 'person' });
    expect(writesGranted(yes)).toBe(true);
    // The migrated tasks hold their duplicate keys: adding one again is refused by the database.
    await expect(rpc.call('subconscious.tasks_add', { title: 'summarize the release notes', recurrence: 'cron:0 9 * * *' })).rejects.toMatchObject({
      code: 'conflict',
    });
  });
});
