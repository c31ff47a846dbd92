/** The conscious world's tables: actionables keyed by sha256(`title:source`), its runs, and pruned dismissed ids. */
export interface ConsciousActionablesTable {
  id: string;
  title: string;
  description: string;
  source: string;
  priority: string;
  /** 0 critical, 1 important, 2 normal: lists sort on it. */
  priority_rank: number;
  actionable: number;
  requires_confirmation: number;
  has_complex_action: number;
  source_label: string;
  /** new | done | dismissed. */
  state: string;
  /** When a person last changed the state (null: never). */
  state_changed_at: number | null;
  created_at: number;
  updated_at: number;
  last_seen_at: number;
  run_id: string;
  /** The memory document it came from (0004; null: none matched). */
  source_namespace: string | null;
  source_external_id: string | null;
  source_title: string | null;
}

/** One run (a tick that read memory). */
export interface ConsciousRunsTable {
  /** The tick id. */
  id: string;
  /** running | completed | failed | interrupted. */
  status: string;
  started_at: number;
  finished_at: number | null;
  /** JSON array of namespaces. */
  namespaces: string;
  documents: number;
  count: number;
  new: number;
  cut: number;
  duration_ms: number | null;
  error: string | null;
  error_kind: string | null;
}

/** A dismissed item whose row was pruned: only its id, so extracting it again keeps it dismissed. */
export interface ConsciousDismissedTable {
  id: string;
  dismissed_at: number;
}

export interface ConsciousTables {
  conscious_actionables: ConsciousActionablesTable;
  conscious_runs: ConsciousRunsTable;
  conscious_dismissed: ConsciousDismissedTable;
}
