/**
 * The engine's tables: namespaced instance state (`<world>:<key>`, seed 4) and the per-world tick
 * leases (the cross-process tick lock). Created by the store's base migrations (`0001_core`).
 * Conventions (both dialects): timestamps are epoch milliseconds (`bigint`, read back as
 * number), booleans are integers 0/1, structured values are JSON text.
 */
/** Namespaced key/value state: keys are `<world>:<key>` (seed 4). */
export interface InstanceStateTable {
  key: string;
  value: string; // JSON
  updated_at: number;
}

/** Per-world tick leases: the cross-process tick lock. */
export interface TickLeasesTable {
  world: string;
  holder: string | null;
  generation: number;
  expires_at: number;
}

export interface EngineTables {
  instance_state: InstanceStateTable;
  tick_leases: TickLeasesTable;
}
