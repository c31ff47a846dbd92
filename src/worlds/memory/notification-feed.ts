/**
 * `MemoryNotificationsKey`'s feed: the notifications table read by cursor, and a wake-up call
 * after each notification this process commits. The memory module provides it; the bots host
 * reads it (this module never knows who listens, so their start order cannot cycle).
 */
import type { MemoryNotificationFeed } from '../../memory/index.js';
import type { OutputStore } from './outputs.js';

export interface NotificationFeed extends MemoryNotificationFeed {
  /** Wake the listeners (the module calls it when `memory.notification` is emitted). */
  notified(): void;
}

export function notificationFeed(outputs: Pick<OutputStore, 'notificationsAfter'>): NotificationFeed {
  const listeners = new Set<() => void>();
  return {
    after: (afterId, limit) => outputs.notificationsAfter(afterId, limit),
    onNotification(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    notified() {
      for (const l of listeners) l();
    },
  };
}
