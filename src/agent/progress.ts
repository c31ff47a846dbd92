/**
 * A run's progress, written as it goes (seed 2 §7.6, issue 17), not only when it settles: the
 * tool steps that returned, the writing calls begun and not returned yet, the text so far (at most
 * every `everyMs` while only text streams), and the final answer once it arrived. A host keeps it
 * with its unit of work (a bot task, a tasks log row), so a worker that dies mid-run leaves a
 * take-over what the run had done: steps it must not repeat, a call that may have happened, an
 * answer it must not pay for again.
 *
 * Writes are serialised and never fail the run, with one exception: `onCall` resolves only once
 * its write landed and rejects when it could not be written, so a writing call never runs
 * unrecorded (the runner's `beforeToolCall` hook fails the call instead).
 */
import { describeError, type Clock, type Logger } from '../core/index.js';
import type { RecordedStep } from './checkpoint.js';
import type { ToolAccess } from './permissions.js';

/** A tool call that began and has not returned (no step recorded for it yet). */
export interface InFlightCall {
  toolCallId: string;
  /** Model-facing tool name (`server__tool`). */
  tool: string;
  server: string;
  access: ToolAccess;
  /** JSON of the arguments, truncated. */
  input: string;
  at: number;
}

/** What one write carries: this run's progress so far. */
export interface ProgressState<A> {
  text: string;
  /** This run's tool steps, in order. */
  steps: RecordedStep[];
  inFlight: InFlightCall[];
  answer: A | null;
  at: number;
}

/** While a run only streams text, its progress is rewritten at most this often. */
export const PROGRESS_TEXT_EVERY_MS = 5_000;

export class RunProgress<A> {
  private readonly steps: RecordedStep[] = [];
  private readonly inFlight = new Map<string, InFlightCall>();
  private chain: Promise<boolean> = Promise.resolve(true);
  private lastTextWrite = -Infinity;
  private text = '';
  private answer: A | null = null;

  constructor(
    private readonly o: {
      clock: Clock;
      log: Logger;
      /** Persist one state; resolves false (or throws) when it was not written. */
      write: (state: ProgressState<A>) => Promise<boolean | void>;
      /** Named in the warning when a write fails. */
      what: string;
      everyMs?: number | undefined;
    },
  ) {}

  /** The reply's text so far; resolves when its write (if any) is done. */
  async onText(text: string): Promise<void> {
    this.text = text;
    if (text.trim() && this.o.clock.now() - this.lastTextWrite >= (this.o.everyMs ?? PROGRESS_TEXT_EVERY_MS)) await this.write();
    else await this.chain;
  }

  /** A call is about to run: resolves once that is written, rejects when it could not be (the call must not run). */
  async onCall(call: InFlightCall): Promise<void> {
    this.inFlight.set(call.toolCallId, call);
    if (!(await this.write())) throw new Error(`could not record the call to ${call.tool} before running it`);
  }

  /** A tool step finished (ok, error, denied, expired or cancelled): it is no longer in flight. */
  onStep(step: RecordedStep): void {
    this.steps.push(step);
    this.inFlight.delete(step.toolCallId);
    void this.write();
  }

  /** The final answer arrived: written at once (before the settle starts); resolves when it is. */
  async onAnswer(answer: A): Promise<void> {
    this.answer = answer;
    await this.write();
  }

  /** Resolves when every write asked for so far is done. */
  async idle(): Promise<void> {
    await this.chain;
  }

  private write(): Promise<boolean> {
    const at = this.o.clock.now();
    this.lastTextWrite = at;
    const state: ProgressState<A> = { text: this.text, steps: [...this.steps], inFlight: [...this.inFlight.values()], answer: this.answer, at };
    this.chain = this.chain.then(async () => {
      try {
        return (await this.o.write(state)) !== false;
      } catch (err) {
        this.o.log.warn({ err: describeError(err) }, `could not write ${this.o.what}`);
        return false;
      }
    });
    return this.chain;
  }
}
