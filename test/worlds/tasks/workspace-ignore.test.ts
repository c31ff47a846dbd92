/**
 * A quiet workspace stays quiet: files that change by themselves (version control, dependencies,
 * our database and its WAL, editor swap files) and the globs of `[worlds.tasks] workspace_ignore`
 * are not a change, so they cost no model call; a file the person edits still is one.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tasksConfig } from '../../../src/worlds/tasks/config.js';
import { workspaceIgnore } from '../../../src/worlds/tasks/workspace-ignore.js';
import { createTasksHarness, isEvaluation, tasksInPrompt, type TasksHarness } from './harness.js';

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe('workspace ignore list', () => {
  it('matches the built-in noise and added globs, by name at any depth or by path from the root', () => {
    const ignored = workspaceIgnore(['scratch/', 'logs/*.txt', '**/*.tmp']);
    for (const [rel, dir] of [
      ['node_modules', true],
      ['web/node_modules', true],
      ['notes.md.swp', false],
      ['docs/.notes.md.swp', false],
      ['docs/4913', false],
      ['notes.md~', false],
      ['#notes.md#', false],
      ['.#notes.md', false],
      ['app.db', false],
      ['data/app.db-wal', false],
      ['data/app.sqlite-shm', false],
      ['.DS_Store', false],
      ['scratch', true],
      ['logs/today.txt', false],
      ['a/b/c.tmp', false],
    ] as const)
      expect(ignored(rel, dir), rel).toBe(true);
    for (const [rel, dir] of [
      ['notes.md', false],
      ['src/app.ts', false],
      ['scratch', false], // a folder pattern names folders only
      ['logs/deep/today.txt', false], // `*` stays within one folder
      ['other/logs/today.txt', false], // a pattern with `/` is anchored at the root
      ['database.md', false],
    ] as const)
      expect(ignored(rel, dir), rel).toBe(false);
  });

  it('config: workspace_ignore defaults to no extra globs and refuses what is not a list of globs', () => {
    expect(tasksConfig.parse({}).workspace_ignore).toEqual([]);
    expect(tasksConfig.parse({ workspace_ignore: ['scratch/', ' *.log '] }).workspace_ignore).toEqual(['scratch/', '*.log']);
    expect(tasksConfig.safeParse({ workspace_ignore: 'scratch/' }).success).toBe(false);
    expect(tasksConfig.safeParse({ workspace_ignore: [''] }).success).toBe(false);
  });

  it('touching ignored files makes no model call; editing a real file brings one evaluation back', async () => {
    h = await createTasksHarness({ agent: false, settings: { workspaceIgnore: ['scratch/'] } });
    const ws = h.store.workspace;
    writeFileSync(path.join(ws, 'notes.md'), 'first notes\n');
    h.server.handle((req) => ({ json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: 'noop', reason: 'quiet' })) } }));
    expect((await h.instance.tick()).kind).toBe('committed');
    const calls = () => h!.server.chatRequests.filter(isEvaluation).length;
    const first = calls();
    expect(first).toBeGreaterThan(0);

    // Noise: an editor's swap file, dependencies, a SQLite WAL, git, our own folder, a configured glob.
    await h.clock.advance(5 * 60_000);
    for (const dir of ['node_modules/pkg', '.git', 'data', 'scratch', '.subconscious']) mkdirSync(path.join(ws, dir), { recursive: true });
    writeFileSync(path.join(ws, '.notes.md.swp'), 'swap');
    writeFileSync(path.join(ws, 'notes.md~'), 'backup');
    writeFileSync(path.join(ws, 'node_modules/pkg/index.js'), 'x');
    writeFileSync(path.join(ws, 'data/app.db-wal'), 'wal');
    writeFileSync(path.join(ws, 'data/app.db'), 'db');
    writeFileSync(path.join(ws, '.git/index'), 'git');
    writeFileSync(path.join(ws, '.subconscious/extra.db-wal'), 'wal');
    writeFileSync(path.join(ws, 'scratch/tmp.txt'), 'scratch');
    const quiet = await h.instance.tick();
    expect(quiet.kind, quiet.message).toBe('quiet');
    expect(calls()).toBe(first);

    // A file the person edits is a change.
    await h.clock.advance(5 * 60_000);
    writeFileSync(path.join(ws, 'notes.md'), 'new notes\n');
    expect((await h.instance.tick()).kind).toBe('committed');
    expect(calls()).toBe(first + 1);
  });
});
