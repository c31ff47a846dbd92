/**
 * `subconscious simulate` copies the person's bots and their heartbeat state (read-only), so a
 * simulated day answers "what would these N idle bots cost": the heartbeat ticks over them, the
 * due one is triaged and sleeps, and no model call is made. The database is not changed by a byte.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { productModules } from '../../src/app/modules.js';
import { openScratchStore } from '../../src/app/scratch-store.js';
import { simulate } from '../../src/app/simulate.js';
import type { BotsTables } from '../../src/bots/index.js';
import { openStore, tablesView, type Store } from '../../src/store/index.js';
import type { HeartbeatTables } from '../../src/worlds/heartbeat/index.js';
import { defaultBotRow } from '../../src/worlds/heartbeat/index.js';

const BOTS = 30;
const START = Date.UTC(2026, 0, 5, 9, 0, 0);
/** Nothing answers here: a simulation that contacted the model would fail. */
const env = {
  SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1',
  SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
  SUBCONSCIOUS_LOCAL_MODEL: 'local-model',
  SUBCONSCIOUS_AGENT_MODEL: 'agent-model',
};

let workspace: string;
let dbFile: string;
beforeEach(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-sim-bots-'));
  const store = await openStore({ workspace, migrations: productModules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])) });
  try {
    await personsBots(store);
  } finally {
    await store.close();
  }
  dbFile = path.join(workspace, '.subconscious', 'subconscious.db');
});
afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

/** The person's bots: each with its direct thread and heartbeat row; bot 0 is due now with its own interval. */
async function personsBots(store: Store): Promise<void> {
  const db = tablesView<BotsTables & HeartbeatTables>(store.db);
  for (let i = 0; i < BOTS; i++) {
    const id = `bot-${i}`;
    const at = START - 86_400_000;
    await db
      .insertInto('bots_bots')
      .values({
        id,
        name: `bot${i}`,
        label: `Bot ${i}`,
        description: '',
        persona: 'Helpful.',
        model_role: 'local',
        model: null,
        tools: '[]',
        created_at: at,
        updated_at: at,
      })
      .execute();
    await db
      .insertInto('bots_threads')
      .values({ id: `thread-${i}`, kind: 'direct', name: `bot${i}`, direct_bot_id: id, next_seq: 7, created_at: at, updated_at: at })
      .execute();
    const row = defaultBotRow(id, `thread-${i}`, at);
    if (i === 0) Object.assign(row, { next_heartbeat_at: START - 60_000, interval_seconds: 900 });
    await db.insertInto('heartbeat_bots').values(row).execute();
  }
}

it("the scratch store holds the person's bots, their direct threads and their heartbeat rows as they are", async () => {
  const bytes = readFileSync(dbFile);
  const scratch = await openScratchStore(workspace, loadConfig({ workspace, modules: productModules, env: {} }), productModules);
  try {
    expect(scratch.imported.copied).toEqual(
      expect.arrayContaining([
        { module: 'bots', what: 'bots', count: BOTS },
        { module: 'heartbeat', what: "bots' heartbeat state", count: BOTS },
      ]),
    );
    const db = tablesView<BotsTables & HeartbeatTables>(scratch.store.db);
    expect((await db.selectFrom('bots_bots').select('id').execute()).length).toBe(BOTS);
    const threads = await db.selectFrom('bots_threads').select(['id', 'direct_bot_id', 'next_seq']).where('kind', '=', 'direct').execute();
    expect(threads).toHaveLength(BOTS);
    expect(threads.every((t) => Number(t.next_seq) === 0)).toBe(true); // no messages copied: the thread starts empty
    const due = await db
      .selectFrom('heartbeat_bots')
      .select(['bot_id', 'next_heartbeat_at', 'interval_seconds', 'thread_id'])
      .where('bot_id', '=', 'bot-0')
      .executeTakeFirstOrThrow();
    expect(due).toEqual({ bot_id: 'bot-0', next_heartbeat_at: START - 60_000, interval_seconds: 900, thread_id: 'thread-0' });
  } finally {
    await scratch.store.close();
  }
  expect(readFileSync(dbFile).equals(bytes)).toBe(true);
});

it('a simulated hour over N idle bots: the heartbeat ticks over the copied bots and costs no model call', async () => {
  const bytes = readFileSync(dbFile);
  const result = await simulate({ workspace, hours: 1, env, start: START });
  expect(result.failures).toEqual([]);
  expect(result.copied.rows).toEqual(
    expect.arrayContaining([
      { module: 'bots', what: 'bots', count: BOTS },
      { module: 'heartbeat', what: "bots' heartbeat state", count: BOTS },
    ]),
  );
  const heartbeat = result.worlds.find((w) => w.world === 'heartbeat')!;
  expect(heartbeat.enabled).toBe(true);
  expect(heartbeat.ticks).toBeGreaterThan(60); // every 30 s for an hour
  expect(heartbeat.failed).toBe(0);
  expect(result.by_world.filter((w) => w.world === 'heartbeat')).toEqual([]);
  expect(readFileSync(dbFile).equals(bytes)).toBe(true);
});
