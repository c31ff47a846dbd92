/**
 * What the conscious world serves outside its ticks: the actionables (list, done, dismiss, reopen),
 * its runs, and the "run now" request (its force flag is read by the next observe).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.js';
import type { Actionable, ActionableState, ConsciousRun } from '../../protocol/conscious.js';
import { ActionableStore } from './actionables.js';
import { RunStore } from './runs.js';
import type { ConsciousEmit } from './events.js';
import type { ActionableMemoryLink } from './memory-link.js';
import type { ConsciousTables } from './tables.js';

export interface ConsciousServiceDeps {
  db: Kysely<ConsciousTables>;
  clock: Clock;
  emit: ConsciousEmit;
  /** Keeps each item's memory document in step with its state (absent: no memory documents). */
  link?: ActionableMemoryLink | undefined;
}

export class ConsciousService {
  readonly actionables: ActionableStore;
  readonly runs: RunStore;
  private forceNext = false;

  constructor(private readonly deps: ConsciousServiceDeps) {
    this.actionables = new ActionableStore(deps.db);
    this.runs = new RunStore(deps.db);
  }

  /** The latest runs, newest first. */
  listRuns(limit = 10): Promise<ConsciousRun[]> {
    return this.runs.list(limit);
  }

  list(opts: { state?: ActionableState | undefined; limit?: number | undefined } = {}): Promise<Actionable[]> {
    return this.actionables.list(opts);
  }

  dismiss(id: string): Promise<Actionable> {
    return this.change(id, 'dismissed', 'dismissed');
  }

  complete(id: string): Promise<Actionable> {
    return this.change(id, 'done', 'done');
  }

  /** Undo: a done or dismissed item is new again. */
  reopen(id: string): Promise<Actionable> {
    return this.change(id, 'new', 'reopened');
  }

  /** A person's choice, then its memory document (a failed write is warned; the choice stands). */
  private async change(id: string, state: ActionableState, reason: 'dismissed' | 'done' | 'reopened'): Promise<Actionable> {
    const item = await this.actionables.setState(id, state, this.deps.clock.now());
    await this.deps.link?.write([item]);
    this.deps.emit('conscious.actionables_changed', { ids: [id], reason });
    return item;
  }

  /** A person asked for a run: with `force`, the next observe reads memory even if it did not change. */
  requestRun(opts: { force?: boolean | undefined } = {}): void {
    if (opts.force) this.forceNext = true;
  }

  /** A forced run is pending (cleared when a run commits, so a failed one is retried). */
  get forced(): boolean {
    return this.forceNext;
  }

  clearForce(): void {
    this.forceNext = false;
  }
}
