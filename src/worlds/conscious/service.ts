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
import type { ConsciousTables } from './tables.js';

export interface ConsciousServiceDeps {
  db: Kysely<ConsciousTables>;
  clock: Clock;
  emit: ConsciousEmit;
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

  async dismiss(id: string): Promise<Actionable> {
    const item = await this.actionables.setState(id, 'dismissed', this.deps.clock.now());
    this.deps.emit('conscious.actionables_changed', { ids: [id], reason: 'dismissed' });
    return item;
  }

  async complete(id: string): Promise<Actionable> {
    const item = await this.actionables.setState(id, 'done', this.deps.clock.now());
    this.deps.emit('conscious.actionables_changed', { ids: [id], reason: 'done' });
    return item;
  }

  /** Undo: a done or dismissed item is new again. */
  async reopen(id: string): Promise<Actionable> {
    const item = await this.actionables.setState(id, 'new', this.deps.clock.now());
    this.deps.emit('conscious.actionables_changed', { ids: [id], reason: 'reopened' });
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
