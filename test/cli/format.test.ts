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
  const status: StatusResult = { instances: [world], enabled: true, total_ticks: 0, consecutive_failures: 3, last_tick_at: null };
  const lines: string[] = [];
  printStatus(status, (l) => lines.push(l));
  expect(lines).toContain('  waiting: failed 3 times in a row: the model answered 500: down; next try at 14:05');
  expect(lines.some((l) => l.startsWith('  last error:'))).toBe(false);
});
