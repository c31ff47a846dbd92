/**
 * The harness's settings (the `[worlds.orchestration]` section of `subconscious.toml`). Seed 5's
 * numbers are the defaults: the gate forwards at 3 queued diffs; the context manager evicts at
 * 0.85 utilisation (clamped to 0.8–0.9, the seed's lifecycle band) and keeps the 2 newest entries.
 * Finished cycles, their world diff and their compressed history are kept 30 days and at most
 * 5,000 cycles, whichever bound is reached first.
 */
import { z } from 'zod';

export const EVICTION_BAND = { min: 0.8, max: 0.9 } as const;

const clampEviction = (v: number) => Math.min(EVICTION_BAND.max, Math.max(EVICTION_BAND.min, v));

export const orchestrationConfigSchema = z.strictObject({
  /**
   * `auto` (default): live when the memory store and the agent runner are there and the local model
   * answers its probe, else the offline stand-ins for that cycle (the cycle and the state say which
   * and why). `offline`: always the stand-ins (no model). `live`: always the models.
   */
  mode: z.enum(['auto', 'offline', 'live'], { error: 'must be "auto", "offline" or "live"' }).default('auto'),
  /** Utilisation at which semantic history is evicted; outside 0.8–0.9 it is clamped into that band. */
  eviction_threshold: z
    .number({ error: 'must be a number between 0.8 and 0.9' })
    .min(0, 'must be a share of the context window (0..1)')
    .max(1, 'must be a share of the context window (0..1)')
    .default(0.85)
    .transform(clampEviction),
  /** Semantic entries kept active on eviction (the newest). */
  keep_newest: z.number().int('must be a whole number').min(0).max(50, 'at most 50').default(2),
  /** The harness's cron trigger: a cycle this long after the last review sets `cron_due` (0: only callers set it). */
  consolidation_minutes: z.number().int('must be whole minutes').min(0, 'must not be negative').max(10_080, 'at most 10080 (a week)').default(60),
  /** Queued diffs at which the summarization gate forwards. */
  gate_threshold: z.number().int('must be a whole number').min(1, 'at least 1').max(100, 'at most 100').default(3),
  /** The context window utilisation is measured against (tokens at 4 characters each). */
  context_window_tokens: z.number().int('must be a whole number').min(128, 'at least 128').max(2_000_000).default(8192),
  /** Memory traces retrieved per cycle. */
  retrieval_limit: z.number().int('must be a whole number').min(0).max(50, 'at most 50').default(5),
  /** Live: the namespace evicted traces are stored under. */
  memory_namespace: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.:-]{0,63}$/, 'lower-case letters, digits and _ . : - (at most 64)')
    .default('orchestration'),
  /** Live: recall only this namespace (absent: every namespace). */
  recall_namespace: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_.:-]{0,63}$/, 'lower-case letters, digits and _ . : - (at most 64)')
    .optional(),
  /** Live: the MCP servers the reasoning tier may use (absent: every configured server; []: none). */
  servers: z.array(z.string().min(1)).optional(),
  /** Finished cycles (with their world diff and compressed history) older than this are deleted. */
  retention_days: z.number().int('must be a whole number of days').min(1, 'at least 1').max(3650, 'at most 3650 (ten years)').default(30),
  /** At most this many finished cycles are kept (the newest). */
  retention_cycles: z.number().int('must be a whole number').min(100, 'at least 100').max(10_000_000, 'at most 10,000,000').default(5000),
});

export type OrchestrationConfig = z.output<typeof orchestrationConfigSchema>;
export type OrchestrationConfigInput = z.input<typeof orchestrationConfigSchema>;

/** Defaults for every key. */
export const DEFAULT_ORCHESTRATION_CONFIG: OrchestrationConfig = orchestrationConfigSchema.parse({});
