/**
 * Runs the real `subconscious` command (compiled, as `npm start` runs it: fresh-build.ts keeps
 * `dist/` current) in a child process and collects what it
 * printed. Asynchronous on purpose: a scripted model server in the test's own process must keep
 * answering while the command runs.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const CLI = path.join(ROOT, 'dist', 'cli', 'main.js');

export interface CliResult {
  code: number | null;
  out: string;
  err: string;
}

/** `subconscious <args> --workspace <workspace>` with quiet logs and `env` on top of this process's. */
export function runCli(args: string[], workspace: string, env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--enable-source-maps', CLI, ...args, '--workspace', workspace], {
      cwd: ROOT,
      env: { ...process.env, SUBCONSCIOUS_LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}
