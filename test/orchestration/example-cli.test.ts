/**
 * `subconscious example closed-loop` through the real command (a child process running the CLI
 * from source): seed 5's `main.rs` — each cycle and the final state, the same every run, with no
 * model, no daemon and nothing written to the workspace.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClosedLoopExample, type ExampleCycle } from '../../src/orchestration/index.js';
import { runCli } from '../support/cli.js';

let workspace: string;
beforeAll(() => {
  workspace = mkdtempSync(path.join(os.tmpdir(), 'subc-example-'));
});
afterAll(() => {
  rmSync(workspace, { recursive: true, force: true });
});

describe('subconscious example closed-loop', () => {
  it('prints every cycle and the final state, exactly what the example returns, and touches nothing', async () => {
    const { code, out, err } = await runCli(['example', 'closed-loop'], workspace, {
      // Proof that no model is needed: every endpoint points at a closed port.
      SUBCONSCIOUS_LOCAL_BASE_URL: 'http://127.0.0.1:9/v1',
      SUBCONSCIOUS_AGENT_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    expect(err).toBe('');
    expect(code).toBe(0);
    const { rendering } = await runClosedLoopExample();
    expect(out).toBe(`${rendering}\n`);
    // What a person reads: the topology with the second quick-tier pass, a held and a forwarded gate, an eviction, the final state.
    expect(out).toContain('path      channel_ingestion → frontend_agent → agent_execution → summarization_gate → frontend_agent → context_manager_hook → END');
    expect(out).toContain('→ context_manager_hook → subconscious_eval → END');
    expect(out).toMatch(/gate {6}held 1 diff \(forwards at 3\)/);
    expect(out).toMatch(/gate {6}forwarded \d+ diffs? \(escalation\)/);
    expect(out).toMatch(/evicted {3}\S/);
    expect(out).toContain('Final state');
    expect(out).toMatch(/ {2}trigger_subconscious {3}false/);
    expect(out).toMatch(/ {2}cron_due {15}false/);
    expect(readdirSync(workspace)).toEqual([]); // no store, no token, no config written
  });

  it('--json gives the cycles and the final state as data', async () => {
    const { code, out } = await runCli(['example', 'closed-loop', '--json'], workspace);
    expect(code).toBe(0);
    const parsed = JSON.parse(out) as { cycles: ExampleCycle[]; state: { cycle: number; trigger_subconscious: boolean; cron_due: boolean } };
    expect(parsed.cycles.map((c) => c.seq)).toEqual([1, 2, 3, 4]);
    expect(parsed.cycles.map((c) => c.gate?.forwarded)).toEqual((await runClosedLoopExample()).cycles.map((c) => c.gate?.forwarded));
    expect(parsed.state).toMatchObject({ cycle: 4, trigger_subconscious: false, cron_due: false });
    expect(existsSync(path.join(workspace, '.subconscious'))).toBe(false);
  });

  it('is listed in the help, and a wrong subcommand is a usage error', async () => {
    const help = await runCli(['example', '--help'], workspace);
    expect(help.out).toContain('closed-loop');
    const wrong = await runCli(['example', 'open-loop'], workspace);
    expect(wrong.code).not.toBe(0);
    expect(wrong.err).toMatch(/unknown command 'open-loop'/);
  });
});
