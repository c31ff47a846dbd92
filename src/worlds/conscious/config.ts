/**
 * `[worlds.conscious]` in `subconscious.toml` (seed 3): a run every 5 minutes after a 60-second
 * initial delay, on the `local` model role (the seed's cheap background model), reading up to 50
 * documents per namespace (the seed's 10 lost older still-pending mail on a busy mailbox) within
 * a 12,000-token context budget.
 */
import { z } from 'zod';

export const consciousConfigSchema = z.strictObject({
  interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440 (a day)').default(5),
  /** After start, wait this long before the first run (sources boot, memory syncs). */
  initial_delay_seconds: z.number().int('must be whole seconds').min(0, 'must not be negative').max(3600, 'at most 3600').default(60),
  role: z.enum(['local', 'agent'], { error: 'must be "local" or "agent"' }).default('local'),
  /** Another model on the role's endpoint (the seed's OPENHUMAN_CONSCIOUS_MODEL). */
  model: z.string().trim().min(1, 'must name a model').optional(),
  /** The newest documents read per namespace (all of them get at least `document_min_chars` while the budget lasts). */
  documents_per_namespace: z.number().int('must be a whole number').min(1, 'must be at least 1').max(200, 'at most 200').default(50),
  /** The extraction prompt's memory, in tokens (4 characters each), shared between the namespaces. */
  context_budget_tokens: z.number().int('must be a whole number').min(1_000, 'must be at least 1000').max(200_000, 'at most 200000').default(12_000),
  /** Each recalled document is cut to this many characters in the prompt (the newest, when there is room). */
  document_max_chars: z.number().int('must be a whole number').min(200, 'must be at least 200').max(20_000, 'at most 20000').default(1_500),
  /** What every recalled document gets first (title, sender and first lines), before the newest get more. */
  document_min_chars: z.number().int('must be a whole number').min(100, 'must be at least 100').max(20_000, 'at most 20000').default(400),
  /** In the workspace: when present, replaces the built-in prompt. */
  prompt_file: z
    .string()
    .trim()
    .min(1, 'must name a file')
    .refine((p) => !p.includes('..'), 'must be a file inside the workspace')
    .default('CONSCIOUS_LOOP.md'),
  /** Done or dismissed items no run has extracted for this many days are deleted (0 keeps them). */
  retention_days: z.number().int('must be whole days').min(0, 'must not be negative').max(3650).default(30),
});

export type ConsciousSettings = z.output<typeof consciousConfigSchema>;

export const DEFAULT_CONSCIOUS_SETTINGS: ConsciousSettings = consciousConfigSchema.parse({});
