/**
 * The checkpoint a bot run leaves as it goes (seed 2 §7.6), not only at settle: the agent layer's
 * progress writer (`RunProgress`: after every tool step and, while the run only writes text, at
 * most every few seconds) kept as the task's checkpoint — so a daemon killed mid-run leaves the
 * resume a checkpoint that names what the killed run had done. The steps of the runs before this
 * one (the task's checkpoint when it began) come first, so a resume of a resume still sees them.
 * Once the final answer arrived it is in every write (`answer.ts`), so a kill before the settle
 * leaves it for the take-over.
 */
import { buildCheckpoint, CHECKPOINT_STEPS_MAX, RunProgress, type ProgressState, type RecordedStep } from '../agent/index.js';
import type { Clock, Logger } from '../core/index.js';
import type { TaskCheckpoint } from '../protocol/bots.js';
import type { AnswerRecord } from './answer.js';
import type { TaskStore } from './task-store.js';

export class ProgressCheckpoint {
  private readonly progress: RunProgress<AnswerRecord>;

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
  ) {
    this.progress = new RunProgress<AnswerRecord>({
      clock: o.clock,
      log: o.log.child({ task: o.taskId }),
      what: 'a run’s progress checkpoint (settle writes one)',
      everyMs: o.everyMs,
      write: (state) => o.tasks.writeProgress(o.taskId, o.runId, this.json(state)),
    });
  }

  /** The reply's text so far (as the stream writer flushes it); resolves when its write (if any) is done. */
  onText(text: string): Promise<void> {
    return this.progress.onText(text);
  }

  /** A tool step finished (ok, error, denied, expired or cancelled). */
  onStep(step: RecordedStep): void {
    this.progress.onStep(step);
  }

  /** The final answer arrived: written at once (before the settle starts); resolves when it is. */
  onAnswer(answer: AnswerRecord): Promise<void> {
    return this.progress.onAnswer(answer);
  }

  /** Resolves when every write asked for so far is done. */
  idle(): Promise<void> {
    return this.progress.idle();
  }

  private json(state: ProgressState<AnswerRecord>): string {
    const text = state.answer?.text ?? state.text;
    const earlier = (this.o.before?.steps ?? []) as RecordedStep[];
    const cp = buildCheckpoint({ text, steps: [...earlier, ...state.steps].slice(-CHECKPOINT_STEPS_MAX), title: this.o.title, at: state.at });
    // No text yet: the earlier run's summary says more than the title does.
    if (!text.trim() && this.o.before?.summary) cp.summary = this.o.before.summary;
    return JSON.stringify(state.answer ? { ...cp, answer: state.answer } : cp);
  }
}
