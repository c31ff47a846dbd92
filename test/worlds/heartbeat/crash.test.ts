/**
 * Seed 2 §13 acceptance 2, for real: a daemon (a child process on a SQLite file) killed with
 * SIGKILL mid-run and restarted resumes the task within 3 ticks, with no duplicate deliverable,
 * and keeps its attempt count across a second kill — this time in the middle of the resume.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BotsTables } from '../../../src/bots/index.js';
import { tablesView } from '../../../src/store/index.js';
import type { HeartbeatTables } from '../../../src/worlds/heartbeat/index.js';
import { openProductStore } from '../../support/stores.js';
import { startModelServer, type ModelServer } from '../../support/model-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../..');
const fixture = path.join(here, 'fixtures', 'crash-daemon.ts');
const T0 = Date.UTC(2026, 0, 1, 9, 0, 0);

interface Daemon {
  child: ChildProcess;
  send<T = Record<string, unknown>>(line: string): Promise<T>;
  kill(): Promise<void>;
}

function launch(file: string, baseUrl: string, start: number, children: ChildProcess[]): Daemon {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, file, baseUrl, String(start)], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const answers = readline.createInterface({ input: child.stdout! });
  const waiting: Array<(line: string) => void> = [];
  answers.on('line', (line) => waiting.shift()?.(line));
  return {
    child,
    send: <T>(line: string) =>
      new Promise<T>((resolve, reject) => {
        const onExit = () => reject(new Error(`daemon exited during "${line}": ${err}`));
        child.once('exit', onExit);
        waiting.push((answer) => {
          child.off('exit', onExit);
          const value = JSON.parse(answer) as T & { error?: string };
          if (value.error) reject(new Error(value.error));
          else resolve(value);
        });
        child.stdin!.write(`${line}\n`);
      }),
    kill: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

/** Ticks every 30 s (simulated) until one resumes; returns how many it took. */
const seen: string[] = [];
async function ticksUntilResumed(d: Daemon, limit = 6): Promise<number> {
  for (let n = 1; n <= limit; n++) {
    const t = await d.send<{ kind: string; message: string }>('TICK');
    seen.push(t.message);
    if (t.message.includes('resumed')) return n;
    await d.send('ADVANCE 30000');
  }
  throw new Error(`no resume within ${limit} ticks: ${seen.join(' | ')}`);
}

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

  it('resumes within 3 ticks after a restart, keeps attempts across a second kill mid-resume, and delivers once', { timeout: 120_000 }, async () => {
    const file = path.join(dir, 'daemon.db');
    let runs = 0;
    model.handle((req) => {
      if (req.body!.model === 'pulse-model') {
        return {
          json: {
            verdict: 'resume',
            taskId: null,
            reason: 'the checklist was cut off by a restart',
            instruction: 'Continue the checklist.',
            etaMinutes: 0,
            urgency: 'normal',
            confidence: 0.9,
          },
        };
      }
      runs++;
      if (runs === 1) return { text: 'Wrote launch-checklist.md; 3 of 7 items are checked so far and the rest', stall: true };
      if (runs === 2) return { text: 'Verified the file: 3 of 7 checked. Now checking item 4, then', stall: true };
      return { text: 'Finished: all 7 items of the Q4 launch checklist are checked.' };
    });

    // 1. Killed mid-run.
    let d = launch(file, model.baseUrl, T0, children);
    const { taskId } = await d.send<{ taskId: string }>('SEND Prepare the Q4 launch checklist');
    await d.send(`STREAMING ${taskId}`);
    await d.kill();

    // 2. Restarted (the run had been going for a few minutes): repair, then the heartbeat resumes
    //    within 3 ticks; killed again mid-resume.
    d = launch(file, model.baseUrl, T0 + 5 * 60_000, children);
    const firstResume = await ticksUntilResumed(d);
    expect(firstResume).toBeLessThanOrEqual(3);
    await d.send(`STREAMING ${taskId}`);
    await d.kill();
    expect(runs).toBe(2);

    // 3. Restarted again: the attempt counted before the second kill is still there.
    d = launch(file, model.baseUrl, T0 + 15 * 60_000, children);
    const secondResume = await ticksUntilResumed(d);
    expect(secondResume).toBeLessThanOrEqual(3);
    expect((await d.send<{ status: string }>(`SETTLED ${taskId}`)).status).toBe('done');
    await d.kill();

    const store = await openProductStore({ sqliteFile: file });
    try {
      const db = tablesView<BotsTables & HeartbeatTables>(store.db);
      const tasks = await db.selectFrom('bots_tasks').selectAll().execute();
      expect(tasks).toHaveLength(1); // no duplicate task
      expect(tasks[0]).toMatchObject({ id: taskId, status: 'done', attempts: 2 });
      const replies = await db.selectFrom('bots_messages').selectAll().where('role', '=', 'bot').orderBy('seq').execute();
      // Two replies cut off by the kills (kept, marked), one finished: the deliverable once.
      expect(replies.map((m) => [m.status, m.interrupted])).toEqual([
        ['error', 1],
        ['error', 1],
        ['done', 0],
      ]);
      expect(replies.filter((m) => m.text.includes('Finished: all 7 items'))).toHaveLength(1);
      const notes = await db.selectFrom('bots_messages').select('text').where('role', '=', 'system').execute();
      expect(notes.map((n) => n.text)).toEqual([
        expect.stringMatching(/^Woke up to continue “Prepare the Q4 launch checklist”/),
        expect.stringMatching(/^Woke up to continue “Prepare the Q4 launch checklist”/),
      ]);
      const resumed = await db.selectFrom('heartbeat_log').selectAll().where('outcome', '=', 'resumed').orderBy('at').execute();
      expect(resumed.map((e) => e.reason)).toEqual([expect.stringContaining('(attempt 1)'), expect.stringContaining('(attempt 2)')]);
    } finally {
      await store.close();
    }
  });

  it(
    'killed 2 s after a person’s message while the reply runs: resumed within 3 ticks of the end of their activity window, the preamble naming what the killed run wrote',
    { timeout: 120_000 },
    async () => {
      const file = path.join(dir, 'daemon.db');
      const prompts: string[] = [];
      model.handle((req) => {
        if (req.body!.model === 'pulse-model') {
          return {
            json: {
              verdict: 'resume',
              taskId: null,
              reason: 'cut off by a crash',
              instruction: 'Continue.',
              etaMinutes: 0,
              urgency: 'normal',
              confidence: 0.9,
            },
          };
        }
        prompts.push(JSON.stringify(req.body!.messages));
        if (prompts.length === 1) return { text: 'Drafted the launch email: subject line and the first two paragraphs are written, next', stall: true };
        return { text: 'Finished the launch email.' };
      });

      let d = launch(file, model.baseUrl, T0, children);
      const { taskId } = await d.send<{ taskId: string }>('SEND Draft the launch email');
      await d.send(`STREAMING ${taskId}`);
      await d.kill();

      // Back 2 s after the message (default config: 30 s ticks). The person's message counts as
      // activity until 90 s after it; from then on the work is resumable.
      d = launch(file, model.baseUrl, T0 + 2000, children);
      const windowEnds = T0 + 90_000;
      let ticksAfterWindow = 0;
      let now = T0 + 2000;
      const log: string[] = [];
      for (let n = 0; n < 12; n++) {
        const t = await d.send<{ message: string }>('TICK');
        log.push(`${(now - T0) / 1000}s: ${t.message}`);
        if (now >= windowEnds) ticksAfterWindow++;
        if (t.message.includes('resumed')) break;
        now = (await d.send<{ now: number }>('ADVANCE 30000')).now;
      }
      expect(log.at(-1), log.join(' | ')).toContain('resumed');
      expect(now).toBeGreaterThanOrEqual(windowEnds); // never over the person
      expect(ticksAfterWindow, log.join(' | ')).toBeLessThanOrEqual(3);
      expect((await d.send<{ status: string }>(`SETTLED ${taskId}`)).status).toBe('done');
      await d.kill();

      // The killed run left a checkpoint as it went: the resume's preamble names what it had done.
      expect(prompts).toHaveLength(2);
      expect(prompts[1]).toMatch(/Checkpoint: <untrusted-data label=\\"checkpoint summary\\">\\n\\"Drafted the launch email: subject line/);
      expect(prompts[1]).not.toContain('Checkpoint: none');
    },
  );
});
