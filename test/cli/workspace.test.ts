/**
 * A mistyped `--workspace` is refused before anything is opened: one line naming the path and
 * what to do, exit code 2, and no folder, database or system tasks appear.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';

let parent: string;

beforeEach(() => {
  parent = mkdtempSync(path.join(os.tmpdir(), 'subc-ws-'));
});
afterEach(() => {
  rmSync(parent, { recursive: true, force: true });
});

const commands = [['tasks', 'list'], ['status'], ['start', '--port', '0']].map((args) => [args.join(' '), args] as const);

describe('--workspace that is not a folder', () => {
  it.each(commands)('`%s` refuses a folder that does not exist and creates nothing', async (_name, args) => {
    const missing = path.join(parent, 'nonexist');
    const res = await runCli([...args], missing);
    expect(res.code).toBe(2);
    expect(res.err).toBe(
      `subconscious: workspace ${missing} does not exist — create it first (mkdir -p ${missing}) or pass an existing folder with --workspace [invalid_params]\n`,
    );
    expect(res.out).toBe('');
    expect(existsSync(missing)).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
  });

  it.each(commands)('`%s` refuses a file, naming the folder that holds it', async (_name, args) => {
    const file = path.join(parent, 'subconscious.toml');
    writeFileSync(file, '');
    const res = await runCli([...args], file);
    expect(res.code).toBe(2);
    expect(res.err).toBe(`subconscious: workspace ${file} is a file, not a folder — pass its folder (${parent}) with --workspace [invalid_params]\n`);
    expect(readdirSync(parent)).toEqual(['subconscious.toml']);
  });

  it('a relative path is named in full', async () => {
    const res = await runCli(['status'], path.relative(ROOT, path.join(parent, 'typo'))); // the command runs in ROOT
    expect(res.code).toBe(2);
    expect(res.err).toContain(`workspace ${path.join(parent, 'typo')} does not exist`);
  });
});
