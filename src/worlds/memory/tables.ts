/**
 * The memory world's own tables (its outputs). The memory store's tables (`memory_documents`,
 * `memory_checkpoints`, …) belong to `src/memory/`; these sit beside them under the same kind.
 */

/** `notify_user`: messages on the thread `subconscious:user` (the bots host mirrors it later). */
export interface MemoryNotificationsTable {
  id: string;
  thread: string;
  message: string;
  priority: string;
  tick_id: string;
  created_at: number;
}

export interface MemoryTodosTable {
  id: string;
  title: string;
  note: string | null;
  /** open | done | dropped. */
  status: string;
  tick_id: string;
  created_at: number;
  updated_at: number;
}

export interface MemoryGoalsTable {
  id: string;
  title: string;
  description: string | null;
  /** active | achieved | dropped. */
  status: string;
  tick_id: string;
  created_at: number;
  updated_at: number;
}

export interface MemoryWorldTables {
  memory_notifications: MemoryNotificationsTable;
  memory_todos: MemoryTodosTable;
  memory_goals: MemoryGoalsTable;
}
