/**
 * `subconscious example closed-loop`: seed 5's runnable example (its `main.rs`). It runs the
 * harness graph offline — deterministic stand-ins, no model, no network, no database — over the
 * example's channel packets and prints each cycle and the final state. The workspace is not
 * touched, so it runs the same with or without a daemon.
 */
import type { Command } from 'commander';
import { runClosedLoopExample } from './example.js';

/** Adds the examples to `example` (the group command the CLI made for the orchestration module). */
export function registerExampleCommands(example: Command, print: (line: string) => void): Command {
  example
    .command('closed-loop')
    .description('run the closed-loop harness offline (seed 5) over four channel messages and print each cycle and the final state')
    .option('--json', 'print the cycles and the final state as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { state, cycles, rendering } = await runClosedLoopExample();
      print(opts.json ? JSON.stringify({ cycles, state }, null, 2) : rendering);
    });
  return example;
}
