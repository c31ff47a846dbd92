/**
 * What the model-call ledger says about calls and tokens (the Usage tab): days are calendar
 * days in the viewer's time zone; every figure comes straight from the ledger.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';
import type { ModelRole } from './engine.js';
import { isTimeZone } from './time-zone.js';

export type UsageFigures = {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  /** Calls whose outcome was not `ok` (interrupted ones included; calls in flight not). */
  failed: number;
  /** Calls cut off when their process was killed: made and counted, input tokens estimated, output unknown. */
  interrupted: number;
};

export type UsageGroup = UsageFigures & { key: string };

export type UsageBreakdown = UsageFigures & { by_world: UsageGroup[]; by_purpose: UsageGroup[] };

export type UsageDay = UsageBreakdown & {
  /** `YYYY-MM-DD` in the summary's time zone. */
  date: string;
  /** Epoch ms of the day's start (local midnight, or the first instant after a skipped one). */
  start: number;
};

export type UsageSummary = {
  days: number;
  /** The IANA zone the days are counted in. */
  timezone: string;
  /** @deprecated The same as `timezone` (the naming convention's old name), sent for one more release. */
  time_zone: string;
  /** Epoch ms: the start of the first day covered. */
  from: number;
  /** Epoch ms: when the summary was computed. */
  to: number;
  /** Every world and purpose seen in the period, sorted, so charts keep stable colours. */
  worlds: string[];
  purposes: string[];
  today: UsageDay;
  /** Oldest first, one entry per day, days without calls included with zeros. */
  per_day: UsageDay[];
  /** The whole period. */
  totals: UsageBreakdown;
};

/** One ledger row. */
export type UsageCallRow = {
  id: string;
  at: number;
  world: string;
  purpose: string;
  role: ModelRole;
  model: string;
  input_tokens: number;
  output_tokens: number;
  /** The server sent no usage: tokens were estimated at 4 characters per token. */
  estimated: boolean;
  latency_ms: number;
  /** `ok`, the error kind (`rate_limit`, `timeout`, …), `pending` (in flight) or `interrupted`. */
  outcome: string;
  error: string | null;
  /** `pending` (being made), `done`, or `interrupted` (its process died mid-call). */
  state: 'pending' | 'done' | 'interrupted';
};

export type UsageCalls = { total: number; rows: UsageCallRow[] };

export const usageContract = defineContract()({
  methods: {
    'usage.summary': method(
      z.strictObject({
        days: z.number().int().min(1).max(90).default(14),
        timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris" or "UTC"').optional(),
      }),
      "Model calls and tokens from the ledger, today and per day (default 14 days; {timezone?} is the viewer's IANA zone), by world and by purpose.",
      { renamed: { time_zone: 'timezone' } },
    ).returns<UsageSummary>(),
    'usage.calls': method(
      z.strictObject({
        limit: z.number().int().min(1).max(500).default(50),
        offset: z.number().int().min(0).default(0),
        world: z.string().min(1).max(100).optional(),
      }),
      'The ledger one call per row, newest first, with latency and outcome; paged by limit/offset, optionally one world.',
    ).returns<UsageCalls>(),
  },
  events: [],
});
