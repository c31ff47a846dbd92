/**
 * What one triage pass reads (seed 2 §5, issue 22): in proportion to the bots that are due, and
 * of each only what the rules need. Counted with a plugin on the connection, never timed: a pass
 * over every due bot of the bench's world (1% of the bots cut off mid-reply, a settled history
 * behind each) takes the same statements at two sizes and reads three rows per due bot — its
 * heartbeat row, its open task, its cut-off reply — not its history, and nothing of the bots that
 * are not due (plus the sweep's one row of flags). Reading every message of the window (or a per-bot query) fails it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createCoordinator } from '../../../src/coordination/index.js';
import { FakeClock, uuid } from '../../../src/core/index.js';
import { observe } from '../../../src/worlds/heartbeat/index.js';
import { heartbeatStack } from '../../../devtools/heartbeat-stack.js';
import { populate } from '../../../devtools/heartbeat-triage-world.js';
import { StatementCounter } from '../../../devtools/statement-counter.js';
import { openTestStore, testDialects, type TestStore } from '../../support/stores.js';

const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);

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
    const reads = new StatementCounter();
    const db = store.db.withPlugin(reads);
    const coordinator = await createCoordinator({ store, clock, ids: uuid });
    const { hb, close } = heartbeatStack({ db, clock, coordinator, random: () => 0.5 });
    try {
      await hb.core.settings.setGlobal({ mode: 'triage' });
      await hb.core.settings.global(); // cached from here: the pass below reads no settings
      reads.reset();
      const obs = await observe(hb.core, Infinity, { due: n, deep: n });
      const found = obs.plans.filter((p) => p.triage.kind === 'candidates').map((p) => p.botId);
      return { candidates, found, statements: reads.statements, rows: reads.rows };
    } finally {
      await close();
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
    // The sweep's one EXISTS, the due bots, their tasks (the orphans among them told from those
    // rows), follow-ups, check-ins, budgets, the rules' messages and the person's activity: no
    // existence read (every due bot has a task), no approvals (no task a rule would check them for).
    expect(large.statements).toBe(8);
  });
});
