/**
 * The checkpoint a run leaves as it goes (seed 2 §7.6), not only at settle: after every tool step
 * and, while it only writes text, at most every `everyMs` — so a daemon killed mid-run leaves the
 * resume a checkpoint that names what the killed run had done. The steps of the runs before this
 * one (the task's checkpoint when it began) come first, so a resume of a resume still sees them.
 * Once the final answer arrived it is in every write (`answer.ts`), so a kill before the settle
 * leaves it for the take-over. Writes are serialised and never fail the run.
 */
import { buildCheckpoint, CHECKPOINT_STEPS_MAX, type RecordedStep } from '../agent/index.js';
import { describeError, type Clock, type Logger } from '../core/index.js';
import type { TaskCheckpoint } from '../protocol/bots.js';
import type { AnswerRecord } from './answer.js';
import type { TaskStore } from './task-store.js';

/** While a run only streams text, its checkpoint is rewritten at most this often. */
export const PROGRESS_TEXT_EVERY_MS = 5_000;

export class ProgressCheckpoint {
  private readonly steps: RecordedStep[] = [];
  private chain: Promise<void> = Promise.resolve();
  private lastTextWrite = -Infinity;
  private text = '';
  private answer: AnswerRecord | null = null;

  constructor(
    private readonly o: {
      tasks: Pick<TaskStore, 'writeProgress'>;
      clock: Clock;
      log: Logger;
      taskId: string;
      runId: string;
      title: string;
      /** The task's checkpoint when this run began (a resume's earlier runs). */
      before: TaskCheckpoint | null;
      everyMs?: number;
    },
  ) {}

  /** The reply's text so far (as the stream writer flushes it); resolves when its write (if any) is done. */
  onText(text: string): Promise<void> {
    this.text = text;
    if (text.trim() && this.o.clock.now() - this.lastTextWrite >= (this.o.everyMs ?? PROGRESS_TEXT_EVERY_MS)) this.write();
    return this.chain;
  }

  /** A tool step finished (ok, error, denied, expired or cancelled). */
  onStep(step: RecordedStep): void {
    this.steps.push(step);
    this.write();
  }

  /** The final answer arrived: written at once (before the settle starts); resolves when it is. */
  onAnswer(answer: AnswerRecord): Promise<void> {
    this.answer = answer;
    this.text = answer.text;
    this.write();
    return this.chain;
  }

  /** Resolves when every write asked for so far is done. */
  idle(): Promise<void> {
    return this.chain;
  }

  private write(): void {
    const at = this.o.clock.now();
    this.lastTextWrite = at;
    const earlier = (this.o.before?.steps ?? []) as RecordedStep[];
    const cp = buildCheckpoint({
      text: this.text,
      steps: [...earlier, ...this.steps].slice(-CHECKPOINT_STEPS_MAX),
      title: this.o.title,
      at,
    });
    // No text yet: the earlier run's summary says more than the title does.
    if (!this.text.trim() && this.o.before?.summary) cp.summary = this.o.before.summary;
    const json = JSON.stringify(this.answer ? { ...cp, answer: this.answer } : cp);
    this.chain = this.chain.then(async () => {
      try {
        await this.o.tasks.writeProgress(this.o.taskId, this.o.runId, json);
      } catch (err) {
        this.o.log.warn({ err: describeError(err), task: this.o.taskId }, 'could not write a run’s progress checkpoint; settle writes one');
      }
    });
  }
}
