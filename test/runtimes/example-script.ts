/** What example (c) is told by its model and must print: shared by its test from source and the pack test. */
import { expect } from 'vitest';
import type { ModelServer } from '../support/model-server.js';

/** The agent's two model calls: save the draft (a tool call), then one sentence. */
export function scriptAgent(server: ModelServer): void {
  server.enqueue(
    { toolCalls: [{ name: 'save_draft', arguments: { title: 'Our new API', body: 'Today we ship a new API: what it is, why, and how to start.' } }] },
    { text: 'I saved the draft “Our new API” and finished the post.\nFOLLOWUP: 1d — check the replies to the post' },
  );
}

export function expectExampleRan(stdout: string): void {
  expect(stdout).toMatch(/registered example-runtime: bot writer is ext:example-runtime:writer for the heartbeat/);
  expect(stdout).toContain('reported: post-1 interrupted by a crash');
  expect(stdout).toMatch(/resume received: task post-1, attempt 1, note "Woke up to continue “Announce the new API”/);
  expect(stdout).toMatch(/acked: the task is ours for \d+ s without a report/);
  expect(stdout).toContain('agent: I saved the draft “Our new API” and finished the post.\nFOLLOWUP: 1d — check the replies to the post (tools: save_draft)');
  expect(stdout).toContain('reported: post-1 done');
  expect(stdout).toMatch(/heartbeat log: settled, resumed/);
  expect(stdout).toContain('dispatch ours: done after 1 delivery');
  expect(stdout).toContain('drafts saved: 1');
  // The run's outcome reached the heartbeat: its FOLLOWUP: line is a follow-up it keeps.
  expect(stdout).toMatch(/follow-up pending: "check the replies to the post" due \d{4}-/);
}
