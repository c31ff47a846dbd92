import { useEffect, useState } from 'react';
import { useShell } from './context.js';
import { useRpcResource, type Resource } from './resource.js';

/** The current time, re-read every `everyMs` so relative times stay true. */
export function useNow(everyMs: number, active = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const id = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(id);
  }, [everyMs, active]);
  return now;
}

/** `useRpcResource` wired to the shell's live stream. */
export function useLiveRpc<T>(method: string, params: Record<string, unknown>, events: readonly string[], pollWhile?: (d: T) => boolean): Resource<T> {
  const { live, liveState } = useShell();
  return useRpcResource<T>(method, params, { live, liveState, events, ...(pollWhile ? { pollWhile } : {}) });
}
