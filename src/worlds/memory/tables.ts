/**
 * The memory world's own tables (its outputs). The memory store's tables (`memory_documents`,
 * `memory_checkpoints`, …) belong to `src/memory/`; these sit beside them under the same kind.
 */

/**
 * `notify_user`: the person's notifications, tagged with the thread name `subconscious:user`. They
 * are shown in the Memory tab (`memory.notifications_list`) and announced by `memory.notification`;
 * the bots host, when enabled, copies each into its Subconscious thread (`subconscious:user`) through
 * the `MemoryNotificationsKey` feed (`notificationsAfter` is its cursor read).
 */
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

/** `delegate`: a to-do the agent would hand to a bot; a person accepts (a bot task) or declines it. */
export interface MemoryDelegationsTable {
  id: string;
  todo_id: string;
  todo_title: string;
  bot_id: string;
  bot_name: string;
  instruction: string;
  /** pending | accepted | declined | failed. */
  status: string;
  task_id: string | null;
  thread_id: string | null;
  error: string | null;
  tick_id: string;
  created_at: number;
  updated_at: number;
}

export interface MemoryWorldTables {
  memory_notifications: MemoryNotificationsTable;
  memory_todos: MemoryTodosTable;
  memory_goals: MemoryGoalsTable;
  memory_delegations: MemoryDelegationsTable;
}
