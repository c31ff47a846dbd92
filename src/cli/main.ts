#!/usr/bin/env node
/**
 * The `subconscious` command: start | tick | status | simulate | tasks …
 * Errors print one clear line (message, what to do, code) and exit non-zero: 2 for a mistake in
 * how the command was called, 78 for bad config, 1 otherwise.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { createApp, type App } from '../app/app.js';
import { describeError, isSubconsciousError } from '../core/errors.js';
import { silentLogger } from '../core/logger.js';
import { createRpcClient, type ProductMethods, type StatusResult } from '../protocol/index.js';
import { CliConnection } from './connection.js';
import { announce, startDaemon, type Daemon } from './daemon.js';
import { announceWorker, startWorker } from './worker.js';
import { loadConfig } from '../app/config.js';
import { productModules } from '../app/modules.js';
import { parseHours, printSimulation, progressLine, simulate } from '../app/simulate.js';
import { printStatus, printTickOutcomes } from './format.js';
import { registerModuleCommands } from './modules.js';
import { serveMcpStdio } from './mcp.js';
import { requireWorkspace, UsageError } from './workspace.js';

/** package.json sits two folders up from both src/cli/ and dist/cli/. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command();
program
  .name('subconscious')
  .description('Background cognition engine for AI agents: the loops that run while nobody is typing.')
  .version(version, '-V, --version', 'print the version')
  .showHelpAfterError()
  // Before any command opens (and so creates) the workspace: a mistyped --workspace is refused.
  .hook('preAction', (_program, command) => {
    const { workspace } = command.optsWithGlobals<{ workspace?: string }>();
    if (workspace !== undefined) requireWorkspace(workspace);
  });

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

const workspaceOption = ['-w, --workspace <dir>', 'workspace folder (config, HEARTBEAT.md, .subconscious/)', process.cwd()] as const;

/** Open the app for a one-shot command (no scheduler, no HTTP, quiet logs). */
async function withApp<T>(workspace: string, fn: (app: App) => Promise<T>): Promise<T> {
  const app = await createApp({ workspace, log: silentLogger });
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}

program
  .command('start')
  .description('run the daemon: scheduler, JSON-RPC, events and the web page')
  .option(...workspaceOption)
  .option('-p, --port <n>', 'HTTP port (default 7777, or SUBCONSCIOUS_PORT)', port)
  .option('-H, --host <host>', 'address to bind (default 127.0.0.1)')
  .option('--worker', 'a worker with no HTTP face: scheduler and job workers only, beside a face on the same Postgres (or [server] face = false)')
  .action(async (opts: { workspace: string; port?: number; host?: string; worker?: boolean }) => {
    // Handlers first: a SIGTERM that arrives while the daemon is still starting must stop it cleanly too.
    let daemon: Pick<Daemon, 'stop'> | null = null;
    let requested: string | null = null;
    let stopping = false;
    const stop = (signal: string) => {
      requested = signal;
      if (!daemon || stopping) return;
      stopping = true;
      console.log(`${signal}: stopping (running ticks stop at a checkpoint)…`);
      daemon.stop().then(
        () => process.stdout.write('stopped.\n', () => process.exit(0)),
        (err) => {
          console.error(`error while stopping: ${describeError(err)}`);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    if (opts.worker || !loadConfig({ workspace: opts.workspace, modules: productModules }).server.face) {
      if (opts.port !== undefined || opts.host !== undefined)
        throw new UsageError('a worker has no HTTP face, so --port and --host mean nothing to it', 'leave them out, or run the face with `subconscious start`');
      const worker = await startWorker({ workspace: opts.workspace });
      daemon = worker;
      if (requested) return stop(requested);
      announceWorker(worker, (line) => console.log(line));
      return;
    }
    const face = await startDaemon(opts);
    daemon = face;
    if (requested) return stop(requested);
    await announce(face, (line) => console.log(line));
  });

program
  .command('mcp')
  .description("serve the MCP face on stdio (for Claude Desktop, Cursor, …): through the workspace's daemon, or on the store when none runs")
  .option(...workspaceOption)
  .action(async (opts: { workspace: string }) => {
    // stdout is the MCP channel: every other line goes to stderr.
    await serveMcpStdio(opts.workspace, version);
  });

program
  .command('tick')
  .description('run one tick of each world (or one) and exit')
  .option(...workspaceOption)
  .option('--world <name>', 'only this world')
  .option('--json', 'print the outcomes as JSON')
  .action(async (opts: { workspace: string; world?: string; json?: boolean }) => {
    const outcomes = await withApp(opts.workspace, async (app) => {
      await app.services.mcp.check(); // a situation report should see the tool servers' real health
      return app.registry.tickOnce(opts.world ?? 'all');
    });
    if (opts.json) console.log(JSON.stringify(outcomes, null, 2));
    else printTickOutcomes(outcomes, (l) => console.log(l));
    if (outcomes.some((o) => o.kind === 'failed')) process.exitCode = 1;
  });

program
  .command('status')
  .description('print each world’s status (read from the store)')
  .option(...workspaceOption)
  .option('--json', 'print the same JSON as the subconscious.status RPC')
  .action(async (opts: { workspace: string; json?: boolean }) => {
    // The running daemon when there is one (it also says what a hand edit of subconscious.toml left,
    // and answers when the file is broken), else the store itself; the protocol's typed client over
    // either: the result is a StatusResult by contract.
    const connection = new CliConnection(() => opts.workspace);
    let status: StatusResult;
    try {
      status = await createRpcClient<ProductMethods>((method, params) => connection.call(method, params as Record<string, unknown>))('subconscious.status');
    } finally {
      await connection.close();
    }
    if (opts.json) console.log(JSON.stringify(status, null, 2));
    else printStatus(status, (l) => console.log(l));
  });

program
  .command('simulate')
  .description('a fake-clock day: what would this config cost? (dry run: no model is contacted, your database is only read)')
  .option(...workspaceOption)
  .option('--hours <n>', 'length of the simulated period, 1-168', '24')
  .option('--json', 'print the figures as one JSON object')
  .action(async (opts: { workspace: string; hours: string; json?: boolean }) => {
    const hours = parseHours(opts.hours);
    const progress = process.stderr.isTTY ? progressLine((line) => process.stderr.write(line)) : undefined;
    const result = await simulate({ workspace: opts.workspace, hours, onProgress: progress?.update }).finally(() => progress?.clear());
    if (opts.json) console.log(JSON.stringify(result, null, 2));
    else printSimulation(result, (l) => console.log(l));
    if (result.failures.length) process.exitCode = 1;
  });

registerModuleCommands(program, productModules, workspaceOption);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const code = isSubconsciousError(err) ? ` [${err.code}]` : '';
  console.error(`subconscious: ${describeError(err)}${code}`);
  process.exit(err instanceof UsageError ? 2 : isSubconsciousError(err, 'config_invalid') ? 78 : 1);
}
