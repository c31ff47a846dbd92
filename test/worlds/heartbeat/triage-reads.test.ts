/**
 * What one triage pass reads (seed 2 §5, issue 22): in proportion to the bots that are due, and
 * of each only what the rules need. Counted with a plugin on the connection, never timed: a pass
 * over every due bot of the bench's world (1% of the bots cut off mid-reply, a settled history
 * behind each) takes the same statements at two sizes and reads three rows per due bot — its
 * heartbeat row, its open task, its cut-off reply — not its history, and nothing of the bots that
 * are not due (plus the sweep's one row of flags). Reading every message of the window (or a per-bot query) fails it.
 */
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentRunner, ApprovalStore, McpManager } from '../../../src/agent/index.js';
import { createBotsHost, parseBotsConfig, type BotsTables } from '../../../src/bots/index.js';
import { createCoordinator } from '../../../src/coordination/index.js';
import { FakeClock, silentLogger, uuid } from '../../../src/core/index.js';
import { createLlm } from '../../../src/llm/index.js';
import { tablesView } from '../../../src/store/index.js';
import { createHeartbeat, heartbeatConfig, observe, type HeartbeatTables } from '../../../src/worlds/heartbeat/index.js';
import { populate } from '../../../devtools/heartbeat-triage-world.js';
import { openTestStore, testDialects, type TestStore } from '../../support/stores.js';

const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);

class Reads implements KyselyPlugin {
  statements = 0;
  rows = 0;
  transformQuery(a: PluginTransformQueryArgs): RootOperationNode {
    return a.node;
  }
  async transformResult(a: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.statements++;
    this.rows += a.result.rows.length;
    return a.result;
  }
}

describe.each(await testDialects())('what a triage pass reads, on %s', (dialect) => {
  const stores: TestStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.dispose();
  });

  /** One full pass (triage mode, no per-tick limit) over a fresh world of `n` bots: what it read. */
  async function pass(n: number) {
    const store = await openTestStore(dialect);
    stores.push(store);
    const clock = new FakeClock(NOW);
    const candidates = await populate(store.db, n, NOW);
    const reads = new Reads();
    const db = store.db.withPlugin(reads);
    const coordinator = await createCoordinator({ store, clock, ids: uuid });
    const endpoint = (model: string) => ({ baseUrl: 'http://127.0.0.1:9/v1', model, timeoutMs: 1000 });
    const llm = createLlm({ models: { local: endpoint('pulse'), agent: endpoint('agent') }, db, clock, ids: uuid });
    const approvals = new ApprovalStore({ db, clock, ids: uuid });
    const runner = new AgentRunner({ llm, mcp: new McpManager({ servers: [], clock }), approvals, clock, ids: uuid });
    const host = createBotsHost({
      coordinator,
      db: tablesView<BotsTables>(db),
      clock,
      ids: uuid,
      runner,
      approvals,
      emit: () => undefined,
      log: silentLogger,
      config: parseBotsConfig({}),
    });
    const hb = createHeartbeat({
      db: tablesView<HeartbeatTables>(db),
      host: host.heartbeat,
      llm,
      clock,
      ids: uuid,
      log: silentLogger,
      emit: () => undefined,
      config: heartbeatConfig.parse({}),
      timezone: 'UTC',
      random: () => 0.5,
    });
    try {
      await hb.core.settings.setGlobal({ mode: 'triage' });
      await hb.core.settings.global(); // cached from here: the pass below reads no settings
      reads.statements = reads.rows = 0;
      const obs = await observe(hb.core, Infinity, { due: n, deep: n });
      const found = obs.plans.filter((p) => p.triage.kind === 'candidates').map((p) => p.botId);
      return { candidates, found, statements: reads.statements, rows: reads.rows };
    } finally {
      await hb.close();
      await host.stop();
      await coordinator.stop();
    }
  }

  it('the same statements at 300 and 1,000 bots, and three rows per due bot: no history, nothing of the bots not due', async () => {
    const small = await pass(300);
    const large = await pass(1000);
    for (const p of [small, large]) {
      expect(p.found.sort()).toEqual([...p.candidates].sort());
      // The sweep's one row of flags, then three rows per due bot.
      expect(p.rows).toBe(1 + 3 * p.candidates.length);
    }
    expect(large.candidates).toHaveLength(10);
    expect(large.statements).toBe(small.statements);
    // The sweep's one EXISTS, the due bots, their tasks, orphans, follow-ups, check-ins, budgets,
    // the rules' messages and the person's activity: no existence read (every due bot has a task),
    // no approvals (no task a rule would check them for).
    expect(large.statements).toBe(9);
  });
});
