/**
 * The parent's side of `devtools/heartbeat-crash-daemon.ts`: launch the daemon as a child process
 * on a SQLite file, send it one command line at a time (each answered by one JSON line), kill it
 * with SIGKILL. Used by the heartbeat's crash test and by `bench:heartbeat`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DAEMON = path.join(ROOT, 'devtools', 'heartbeat-crash-daemon.ts');

export interface CrashDaemon {
  child: ChildProcess;
  /** One command (see the daemon's header); rejects with its `error`, or when it exits first. */
  send<T = Record<string, unknown>>(line: string): Promise<T>;
  /** SIGKILL, resolved once it exited. */
  kill(): Promise<void>;
}

/** Start a daemon whose clock begins at `start` (epoch ms); `children` collects it for clean-up. */
export function launchCrashDaemon(file: string, baseUrl: string, start: number, children: ChildProcess[] = []): CrashDaemon {
  const child = spawn(process.execPath, ['--import', 'tsx', DAEMON, file, baseUrl, String(start)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
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
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
