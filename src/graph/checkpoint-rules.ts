/**
 * Rules both checkpointers share, so they fail and prune the same way.
 */
import type { Clock } from '../core/clock.js';
import { describeError, SubconsciousError } from '../core/errors.js';
import type { CheckpointWrite } from './checkpointer.js';

export function threadExists(threadId: string): SubconsciousError {
  return new SubconsciousError('conflict', `Graph thread "${threadId}" already exists.`, {
    hint: 'Another run started it at the same time, or the id is reused: use a fresh thread id.',
    details: { field: 'threadId' },
  });
}

export function staleWrite(w: CheckpointWrite): SubconsciousError {
  return new SubconsciousError(
    'conflict',
    `Graph thread "${w.threadId}" is not at step ${w.seq - 1} or no longer running; checkpoint for "${w.node}" refused.`,
    {
      hint: 'Two runs resumed the same thread, or it was marked failed or pruned meanwhile.',
      details: { field: 'threadId', seq: w.seq },
    },
  );
}

export function failureText(error: unknown): string {
  return describeError(error).slice(0, 2000);
}

/** Threads last updated at or before this instant are old enough to prune. */
export function pruneCutoff(clock: Clock, olderThanMs: number): number {
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new SubconsciousError('invalid_params', `pruneFinished: olderThanMs must be a non-negative number of milliseconds (got ${olderThanMs}).`, {
      details: { field: 'olderThanMs' },
    });
  }
  return clock.now() - olderThanMs;
}
