/**
 * A log row's detail shows the ledger's figures for its model calls (DESIGN invariant 7: cost
 * figures come from the ledger): calls, tokens and milliseconds of the evaluation, of a local
 * text execution and of an agent run are the sums of their `model_calls` rows — latency
 * included, which the ledger measures and a count of the world's own (on its clock) would not.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LogDetail, ModelCalls } from '../../../src/worlds/tasks/index.js';
import { createTasksHarness, isAgent, isEvaluation, isLocalExecution, tasksInPrompt, type TasksHarness } from './harness.js';

let h: TasksHarness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

async function ledgerSum(harness: TasksHarness, purpose: string): Promise<Omit<ModelCalls, 'model'>> {
  const rows = await harness.store.db.selectFrom('model_calls').selectAll().where('purpose', '=', purpose).execute();
  return {
    calls: rows.length,
    input_tokens: rows.reduce((n, r) => n + Number(r.input_tokens), 0),
    output_tokens: rows.reduce((n, r) => n + Number(r.output_tokens), 0),
    latency_ms: rows.reduce((n, r) => n + Number(r.latency_ms), 0),
  };
}

const figures = (c: ModelCalls | null | undefined) =>
  c && { calls: c.calls, input_tokens: c.input_tokens, output_tokens: c.output_tokens, latency_ms: c.latency_ms };

describe('row detail figures', () => {
  it('equal the ledger rows of the row’s evaluation, text execution and agent run', async () => {
    h = await createTasksHarness();
    for (const t of await h.world.service.listTasks()) await h.world.service.updateTask(t.id, { enabled: false });
    const act = await h.world.service.addTask({ title: 'Summarize the build status' });
    const escalate = await h.world.service.addTask({ title: 'Review the deploy queue' });
    h.server.handle((req) => {
      if (isEvaluation(req))
        return {
          delayMs: 30,
          usage: { prompt_tokens: 900, completion_tokens: 80 },
          json: { decisions: tasksInPrompt(req).map((t) => ({ task_id: t.id, decision: t.id === act.id ? 'act' : 'escalate', reason: 'new' })) },
        };
      if (isLocalExecution(req)) return { delayMs: 25, usage: { prompt_tokens: 300, completion_tokens: 40 }, text: 'The build is green.' };
      if (isAgent(req))
        return { delayMs: 20, usage: { prompt_tokens: 500, completion_tokens: 60 }, text: 'RECOMMENDED ACTION: [normal] Move the stuck deploy.' };
      return { status: 500, message: 'unscripted' };
    });
    const outcome = await h.instance.tick();
    expect(outcome.kind, outcome.message).toBe('committed');
    const [actRow] = await h.world.service.listLog({ taskId: act.id });
    const [escRow] = await h.world.service.listLog({ taskId: escalate.id });
    const actDetail = (await h.world.service.logDetail(actRow!.id)) as LogDetail;
    const escDetail = (await h.world.service.logDetail(escRow!.id)) as LogDetail;

    const evaluation = await ledgerSum(h, 'evaluate');
    expect(evaluation.calls).toBe(1);
    expect(evaluation.latency_ms).toBeGreaterThanOrEqual(30);
    expect(figures(actDetail.evaluation)).toEqual(evaluation);
    expect(figures(escDetail.evaluation)).toEqual(evaluation);
    expect(figures(actDetail.execution?.calls)).toEqual(await ledgerSum(h, 'execute'));
    const agent = await ledgerSum(h, 'execute_analysis');
    expect(agent.calls).toBeGreaterThan(0);
    expect(figures(escDetail.execution?.calls)).toEqual(agent);
  });
});
