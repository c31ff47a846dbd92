/** Reads for the faces: the directive in force and the history. Never waits for a tick. */
import { DEFAULT_STEERING_LINE, type SteeringCurrent, type SteeringDirective } from '../../protocol/steering.js';
import { withStatus, type SteeringStore } from './store.js';
import type { HarnessHistory } from './types.js';

export class SteeringService {
  constructor(
    private readonly store: SteeringStore,
    private readonly harness: Pick<HarnessHistory, 'currentCycle'>,
  ) {}

  async current(): Promise<SteeringCurrent> {
    const [cycle, cursor] = await Promise.all([this.harness.currentCycle(), this.store.cursor()]);
    const active = await this.store.forCycle(cycle + 1);
    const row = active ? await this.store.get(active.id) : undefined;
    const directive: SteeringDirective | null = row ? withStatus(row, cycle, row.id) : null;
    return {
      directive,
      injected: directive?.text ?? DEFAULT_STEERING_LINE,
      current_cycle: cycle,
      remaining_cycles: directive?.remaining_cycles ?? null,
      reviewed_seq: cursor.reviewed_seq,
      last_review: cursor.last_outcome && cursor.updated_at !== null ? { outcome: cursor.last_outcome, rows: cursor.last_rows, at: cursor.updated_at } : null,
    };
  }

  async list(limit = 50): Promise<SteeringDirective[]> {
    return this.store.list(Math.max(1, Math.min(200, Math.floor(limit))), await this.harness.currentCycle());
  }
}
