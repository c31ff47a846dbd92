/**
 * What every tab gets from the shell: the live event stream and its state, the daemon status
 * (shared, so cards and banners agree), notices (with an optional action, e.g. Undo), navigation
 * between tabs (`navigate('skills', 'mail')` opens Skills on the server `mail`: `#/skills/mail`)
 * and the rest of the address after the tab, and whether what is shown is stale (the daemon does
 * not answer).
 */
import { createContext, useContext } from 'react';
import type { LiveEvents, LiveSnapshot } from '../api/live.js';
import type { StatusResult } from '../api/types.js';
import type { Resource } from './resource.js';

export type NoticeTone = 'info' | 'error';

/** A button on a notice (e.g. "Undo"); the notice goes once it is pressed. */
export interface NoticeAction {
  label: string;
  run(): void | Promise<void>;
  /** Move the keyboard to the button when it shows (the element it was on went away). */
  focus?: boolean | undefined;
}

export interface Shell {
  live: LiveEvents;
  liveState: LiveSnapshot;
  status: Resource<StatusResult>;
  notify(text: string, tone?: NoticeTone, action?: NoticeAction): void;
  /** Open a tab; `detail` is the rest of its address (`#/<tab>/<detail>`), e.g. the server a Skills link is about. */
  navigate(tabId: string, detail?: string): void;
  /** The address after the tab (`#/skills/mail` → `mail`), or ''. */
  route: string;
  /** When the daemon stopped answering (what is shown is as of then), or null while it answers. */
  staleSince: number | null;
  /** Why actions cannot be used now (the daemon does not answer), or null: controls are disabled with it as their reason. */
  offlineReason: string | null;
}

export const OFFLINE_REASON = 'The daemon does not answer, so this cannot be done now; the page retries by itself.';

export const ShellContext = createContext<Shell | null>(null);

export function useShell(): Shell {
  const shell = useContext(ShellContext);
  if (!shell) throw new Error('useShell outside the shell');
  return shell;
}
