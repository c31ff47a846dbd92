/**
 * Each module's subcommands (`tasks …`, later `bots …`), built from the module list: a group
 * command with `-w`, whose calls go through one `CliConnection` for the command's length.
 */
import type { Command } from 'commander';
import type { WorldModule } from '../engine/index.js';
import { CliConnection } from './connection.js';

export function registerModuleCommands(
  program: Command,
  modules: readonly WorldModule[],
  workspaceOption: readonly [string, string, string],
  print: (line: string) => void = (l) => console.log(l),
): void {
  for (const m of modules) {
    if (!m.cli) continue;
    const group = program
      .command(m.cli.name)
      .description(m.cli.description)
      .option(...workspaceOption);
    const connection = new CliConnection(() => group.opts<{ workspace: string }>().workspace, modules);
    group.hook('postAction', () => connection.close());
    m.cli.register(group, {
      transport: (method, params) => connection.call(method, params),
      subscribe: (listener) => connection.subscribe(listener),
      daemonRunning: () => connection.daemonRunning(),
      print,
    });
  }
}
