/**
 * Seed 2 §13 acceptance 2, for real, as issue 17 made it: a daemon (a child process on a SQLite
 * file) killed with SIGKILL mid-run and restarted continues the task at once — its durable job
 * does, within 0 heartbeat ticks — with no duplicate deliverable, and again after a second kill in
 * the middle of the continuation; its heartbeat attempts are untouched (a cut-off run that its job
 * continues is not a heartbeat resume).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BotsTables } from '../../../src/bots/index.js';
import { tablesView } from '../../../src/store/index.js';
import type { HeartbeatTables } from '../../../src/worlds/heartbeat/index.js';
import { openProductStore } from '../../support/stores.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';
import { launchCrashDaemon } from '../../../devtools/heartbeat-crash-client.js';

const T0 = Date.UTC(2026, 0, 1, 9, 0, 0);

describe('a daemon killed with SIGKILL (SQLite file, real child processes)', () => {
  let dir: string;
  let model: ModelServer;
  const children: ChildProcess[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-hb-crash-'));
    model = await startModelServer();
  });
  afterEach(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'continues the cut-off reply at restart (no tick needed), again after a second kill mid-continuation, and delivers once',
    { timeout: 120_000 },
    async () => {
      const file = path.join(dir, 'daemon.db');
      const prompts: string[] = [];
      model.handle((req) => {
        if (req.body!.model === 'pulse-model') return { status: 500, message: 'no pulse expected: the job continues the run' };
        prompts.push(JSON.stringify(req.body!.messages));
        if (prompts.length === 1) return { text: 'Wrote launch-checklist.md; 3 of 7 items are checked so far and the rest', stall: true };
        if (prompts.length === 2) return { text: 'Verified the file: 3 of 7 checked. Now checking item 4, then', stall: true };
        return { text: 'Finished: all 7 items of the Q4 launch checklist are checked.' };
      });

      // 1. Killed mid-run.
      let d = launchCrashDaemon(file, model.baseUrl, T0, children);
      const { taskId } = await d.send<{ taskId: string }>('SEND Prepare the Q4 launch checklist');
      await d.send(`STREAMING ${taskId}`);
      await d.kill();

      // 2. Restarted a few minutes later: the task's job continues it at once (issue 17 §1), told what
      //    the cut-off run had written; killed again mid-continuation.
      d = launchCrashDaemon(file, model.baseUrl, T0 + 5 * 60_000, children);
      await d.send(`STREAMING ${taskId} Verified the file`);
      await d.kill();
      expect(prompts).toHaveLength(2);
      expect(prompts[1]).toContain('this run continues it');
      expect(prompts[1]).toContain('3 of 7 items are checked so far');

      // 3. Restarted again: continued once more, told the second run's text, and finished.
      d = launchCrashDaemon(file, model.baseUrl, T0 + 15 * 60_000, children);
      expect((await d.send<{ status: string }>(`SETTLED ${taskId}`)).status).toBe('done');
      await d.kill();
      expect(prompts).toHaveLength(3);
      expect(prompts[2]).toContain('Verified the file: 3 of 7 checked');

      const store = await openProductStore({ sqliteFile: file });
      try {
        const db = tablesView<BotsTables & HeartbeatTables>(store.db);
        const tasks = await db.selectFrom('bots_tasks').selectAll().execute();
        expect(tasks).toHaveLength(1); // no duplicate task
        expect(tasks[0]).toMatchObject({ id: taskId, status: 'done', attempts: 0, interrupted: 0 });
        const replies = await db.selectFrom('bots_messages').selectAll().where('role', '=', 'bot').orderBy('seq').execute();
        // One reply, continued in place: the deliverable once.
        expect(replies.map((m) => [m.status, m.text])).toEqual([['done', 'Finished: all 7 items of the Q4 launch checklist are checked.']]);
        expect(await db.selectFrom('heartbeat_log').selectAll().where('outcome', '=', 'resumed').execute()).toEqual([]);
      } finally {
        await store.close();
      }
    },
  );

  it(
    'killed 2 s after a person’s message while the reply runs: continued at restart, the continuation told what the killed run wrote',
    { timeout: 120_000 },
    async () => {
      const file = path.join(dir, 'daemon.db');
      const prompts: string[] = [];
      model.handle((req) => {
        if (req.body!.model === 'pulse-model') return { status: 500, message: 'no pulse expected: the job continues the run' };
        prompts.push(JSON.stringify(req.body!.messages));
        if (prompts.length === 1) return { text: 'Drafted the launch email: subject line and the first two paragraphs are written, next', stall: true };
        return { text: 'Finished the launch email.' };
      });

      let d = launchCrashDaemon(file, model.baseUrl, T0, children);
      const { taskId } = await d.send<{ taskId: string }>('SEND Draft the launch email');
      await d.send(`STREAMING ${taskId}`);
      await d.kill();

      // Back 2 s after the message: the person is still waiting for this reply; its job continues it
      // (the heartbeat's activity window is about not talking over the person, not their own request).
      d = launchCrashDaemon(file, model.baseUrl, T0 + 2000, children);
      expect((await d.send<{ status: string }>(`SETTLED ${taskId}`)).status).toBe('done');
      await d.kill();

      // The killed run left its text as it went: the continuation is told it.
      expect(prompts).toHaveLength(2);
      expect(prompts[1]).toMatch(/partial reply\\">\\n\\"Drafted the launch email: subject line/);
    },
  );
});
