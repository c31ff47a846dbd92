/**
 * `[worlds.memory]` in `subconscious.toml` (seed 4's memory profile), with the memory sources:
 *
 *   [worlds.memory]
 *   interval_minutes = 15
 *
 *   [[worlds.memory.sources]]
 *   kind = "folder"
 *   path = "~/Mail/export"
 *   namespace = "mail"
 */
import { z } from 'zod';
import { memorySourcesSchema } from '../../memory/config.js';

export const memoryWorldConfigSchema = z.strictObject({
  interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440 (a day)').default(15),
  initial_delay_seconds: z.number().int('must be whole seconds').min(0, 'must not be negative').max(3600, 'at most 3600').default(60),
  /** The decision agent's model role (it calls tools) and, optionally, another model on it. */
  role: z.enum(['local', 'agent'], { error: 'must be "local" or "agent"' }).default('agent'),
  model: z.string().trim().min(1, 'must name a model').optional(),
  max_steps: z.number().int('must be a whole number').min(1, 'must be at least 1').max(50, 'at most 50').default(8),
  run_cap_minutes: z.number().positive('must be positive').max(120, 'at most 120').default(10),
  /** Baseline checkpoints kept (older ones, and tombstones only they could see, are deleted). */
  /** The changed documents' content shown to the decision agent, in characters (excerpts, newest change first). */
  changed_content_chars: z.number().int('must be a whole number').min(0, 'must not be negative').max(40_000, 'at most 40000').default(8_000),
  keep_checkpoints: z.number().int('must be a whole number').min(1, 'must be at least 1').max(100, 'at most 100').default(5),
  sources: memorySourcesSchema,
});

export type MemoryWorldSettings = z.output<typeof memoryWorldConfigSchema>;

export const DEFAULT_MEMORY_WORLD_SETTINGS: MemoryWorldSettings = memoryWorldConfigSchema.parse({});
