/** `[worlds.bots]`: seed 2's defaults, and a bad value names its key and the reason. */
import { describe, expect, it } from 'vitest';
import { defaultBotsConfig, parseBotsConfig } from '../../src/bots/index.js';
import { isSubconsciousError } from '../../src/core/index.js';

describe('bots config', () => {
  it('defaults to seed 2: 30 s routine tick, 10-minute unattended approvals, 250 ms between jobs; run caps left to the agent runner', () => {
    expect(defaultBotsConfig).toEqual({
      routine_tick_seconds: 30,
      unattended_approval_minutes: 10,
      next_job_delay_ms: 250,
      stream_flush_ms: 250,
      history_messages: 40,
      history_chars: 60_000,
      max_handoffs: 6,
    });
    expect(parseBotsConfig(undefined)).toEqual(defaultBotsConfig);
    expect(parseBotsConfig({ timezone: 'Europe/Paris', run_cap_minutes: 5 })).toMatchObject({
      timezone: 'Europe/Paris',
      run_cap_minutes: 5,
      routine_tick_seconds: 30,
    });
  });

  it.each([
    [{ routine_tick_seconds: 1 }, 'worlds.bots.routine_tick_seconds: must be at least 5'],
    [{ unattended_approval_minutes: 2.5 }, 'worlds.bots.unattended_approval_minutes: must be a whole number of minutes'],
    [{ timezone: 'Mars/Olympus' }, 'worlds.bots.timezone: must be an IANA time zone such as "Europe/Paris" or "UTC"'],
    [{ routine_tick: 30 }, 'worlds.bots: unknown key "routine_tick"'],
    [{ stream_flush_ms: 5 }, 'worlds.bots.stream_flush_ms: must be at least 20'],
    [{ run_cap_minutes: 0 }, 'worlds.bots.run_cap_minutes: must be above 0'],
    [{ max_steps: 500 }, 'worlds.bots.max_steps: must be at most 200'],
    [{ next_job_delay_ms: -1 }, 'worlds.bots.next_job_delay_ms: must be 0 or more'],
  ])('refuses %j', (raw, message) => {
    expect(() => parseBotsConfig(raw)).toThrow(message);
    try {
      parseBotsConfig(raw);
    } catch (err) {
      expect(isSubconsciousError(err, 'config_invalid')).toBe(true);
    }
  });
});
