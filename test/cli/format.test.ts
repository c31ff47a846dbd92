/** `subconscious status` in plain text: a failing world says why it waits and until when. */
import { expect, it } from 'vitest';
import { printStatus } from '../../src/cli/format.js';
import type { InstanceStatus, StatusResult } from '../../src/protocol/index.js';

const world: InstanceStatus = {
  world: 'tasks',
  description: '',
  tab: null,
  enabled: true,
  disabled_by: null,
  provider_available: true,
  provider_unavailable_reason: null,
  optional_models_unavailable: [],
  interval_minutes: 5,
  last_tick_at: null,
  total_ticks: 0,
  consecutive_failures: 3,
  halted: false,
  halt_reason: null,
  running: false,
  last_outcome: 'failed',
  last_summary: null,
  last_error: 'the model answered 500: down.',
  next_tick_at: null,
  backoff: { failures: 3, reason: 'the model answered 500: down.', next_try_at: new Date(2026, 0, 5, 14, 5).getTime() },
};

it('prints the backoff line of a failing world: how often it failed, why, and the next try (HH:MM)', () => {
  const status: StatusResult = { instances: [world], enabled: true, total_ticks: 0, consecutive_failures: 3, last_tick_at: null, structured_output: [] };
  const lines: string[] = [];
  printStatus(status, (l) => lines.push(l));
  expect(lines).toContain('  waiting: failed 3 times in a row: the model answered 500: down; next try at 14:05');
  expect(lines.some((l) => l.startsWith('  last error:'))).toBe(false);
});

it('prints per model role how its endpoint takes structured output, and what auto learned when', () => {
  const learnedAt = Date.UTC(2026, 0, 5, 9, 30);
  const status: StatusResult = {
    instances: [],
    enabled: false,
    total_ticks: 0,
    consecutive_failures: 0,
    last_tick_at: null,
    structured_output: [
      {
        role: 'local',
        base_url: 'http://127.0.0.1:8080/v1',
        model: 'qwen2.5:7b',
        configured: 'auto',
        in_use: 'json_object',
        learned: { mode: 'json_object', learned_at: learnedAt, reason: 'the server refused response_format json_schema: unsupported' },
      },
      { role: 'agent', base_url: 'https://api.openai.com/v1', model: 'gpt-4.1', configured: 'json_schema', in_use: 'json_schema', learned: null },
    ],
  };
  const lines: string[] = [];
  printStatus(status, (l) => lines.push(l));
  expect(lines).toContain(
    'model local (qwen2.5:7b): structured output auto, using json_object (learned 2026-01-05T09:30:00.000Z: the server refused response_format json_schema: unsupported)',
  );
  expect(lines).toContain('model agent (gpt-4.1): structured output json_schema');
});
