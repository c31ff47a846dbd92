/**
 * What every tab gets from the shell: the live event stream and its state, the daemon status
 * (shared, so cards and banners agree), notices, and navigation between tabs.
 */
import { createContext, useContext } from 'react';
import type { LiveEvents, LiveSnapshot } from '../api/live.js';
import type { StatusResult } from '../api/types.js';
import type { Resource } from './resource.js';

export type NoticeTone = 'info' | 'error';

export interface Shell {
  live: LiveEvents;
  liveState: LiveSnapshot;
  status: Resource<StatusResult>;
  notify(text: string, tone?: NoticeTone): void;
  navigate(tabId: string): void;
}

export const ShellContext = createContext<Shell | null>(null);

export function useShell(): Shell {
  const shell = useContext(ShellContext);
  if (!shell) throw new Error('useShell outside the shell');
  return shell;
}
