/**
 * `subconscious start --worker` (or `[server] face = false`): a worker with the scheduler and the
 * job workers but no HTTP face — no port, no page, no token. It registers as role `worker`, so
 * every face's status lists it. Postgres only: one process owns a SQLite file, and that process
 * is the daemon with its face.
 */
import path from 'node:path';
import { createApp, type App } from '../app/app.js';
import { SubconsciousError } from '../core/errors.js';
import { createLogger, type Logger } from '../core/logger.js';
import type { WorldModule } from '../engine/index.js';
import { securePrivateFolder } from '../server/private-files.js';

export interface WorkerOptions {
  workspace: string;
  log?: Logger;
  modules?: readonly WorldModule[];
  env?: NodeJS.ProcessEnv;
}

export interface Worker {
  app: App;
  stop(): Promise<void>;
}

export async function startWorker(opts: WorkerOptions): Promise<Worker> {
  const log = opts.log ?? createLogger();
  securePrivateFolder(path.resolve(opts.workspace), log);
  const app = await createApp({
    workspace: opts.workspace,
    log,
    env: opts.env ?? process.env,
    role: 'worker',
    showsWarnings: true,
    ...(opts.modules ? { modules: opts.modules } : {}),
  });
  if (app.store.dialect !== 'postgres') {
    await app.close();
    throw new SubconsciousError(
      'config_invalid',
      `A worker without a face needs Postgres: this workspace uses SQLite (${app.store.location}), and one process owns a SQLite file — the daemon itself. ` +
        'Run `subconscious start` (with its face) instead, or set SUBCONSCIOUS_DATABASE_URL=postgres://… (or [database] url) on every worker and the face.',
      { details: { key: 'database.url' } },
    );
  }
  await app.start();
  let stopping: Promise<void> | null = null;
  return { app, stop: () => (stopping ??= app.close()) };
}

/** What a person reads when a worker starts. */
export function announceWorker(worker: Worker, print: (line: string) => void): void {
  const { app } = worker;
  print(`subconscious worker ${app.coordinator.workerId} is running (no HTTP face)`);
  print(`  workspace: ${app.workspace}`);
  print(`  store:     ${app.store.location}`);
  print(`  lease:     ${Math.round(app.coordinator.leaseMs / 1000)} s (a worker that dies is taken over within two)`);
  for (const warning of app.config.warnings) print(`  note: ${warning}`);
}
