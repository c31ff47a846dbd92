/**
 * A tick's JSON log lines carry each key once. The engine gives every tick a child logger that
 * already binds `world` and `tick`; a call that passes `world` again makes pino write the key
 * twice (`"world":"tasks",…,"world":"tasks"`), which collectors read inconsistently.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app/app.js';
import { FakeClock } from '../../src/core/index.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';

/** The top-level keys of one JSON object text, in order, duplicates kept (JSON.parse would drop them). */
function topLevelKeys(json: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const ch = json[i];
    if (ch === '"') {
      let end = i + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const after = json.slice(end + 1).trimStart();
      if (depth === 1 && after.startsWith(':')) keys.push(JSON.parse(json.slice(i, end + 1)) as string);
      i = end;
    } else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
  }
  return keys;
}

const DAY = 86_400_000;
let workspace: string;
let models: ModelServer;
let app: App;
const lines: string[] = [];
const clock = new FakeClock();

beforeAll(async () => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-logkeys-'));
  models = await startModelServer();
  models.handle((req) => {
    const ids = [...new Set([...JSON.stringify(req.body?.messages ?? []).matchAll(/system:[a-z-]+/g)].map((m) => m[0]))];
    return { json: { decisions: ids.map((task_id) => ({ task_id, decision: 'noop', reason: 'nothing new' })) } };
  });
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  app = await createApp({
    workspace,
    clock,
    log,
    env: {
      SUBCONSCIOUS_LOCAL_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_AGENT_BASE_URL: models.baseUrl,
      SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
      SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
    },
  });
});
afterAll(async () => {
  await app.close();
  await models.close();
  rmSync(workspace, { recursive: true, force: true });
});

describe('tick log lines', () => {
  it('carry each key once, including world and tick (the report line and the retention line)', async () => {
    expect((await app.registry.tickOnce('tasks'))[0]).toMatchObject({ kind: 'committed' });
    await clock.advance(31 * DAY); // the first tick's activity rows are now past the 30-day retention
    expect((await app.registry.tickOnce('tasks'))[0]).toMatchObject({ kind: 'committed' });

    const records = lines.map((line) => ({ line, keys: topLevelKeys(line), rec: JSON.parse(line) as Record<string, unknown> }));
    const tickLines = records.filter((r) => r.rec.world === 'tasks' && typeof r.rec.tick === 'string');
    expect(tickLines.map((r) => r.rec.msg)).toEqual(expect.arrayContaining(['situation report built', 'old activity log rows deleted']));
    for (const { line, keys } of records) expect(new Set(keys).size, line).toBe(keys.length);
  });

  it('the key scanner sees a repeated key and ignores nested ones', () => {
    expect(topLevelKeys('{"a":1,"b":{"a":"x:\\"y"},"c":["a",{"a":2}],"a":3}')).toEqual(['a', 'b', 'c', 'a']);
  });
});
