import { useEffect, useState } from 'react';
import { useShell } from './context.js';
import type { ParamsOf, ProductMethods, ResultOf } from '../../../src/protocol/index.js';
import { useRpcResource, type EventName, type MethodName, type Resource } from './resource.js';

/**
 * The current time. The timer only forces a re-render every `everyMs` so relative times stay
 * true; the value is read at render, so data newer than the last timer tick never looks "future".
 */
export function useNow(everyMs: number, active = true): number {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!active) return;
    const id = setInterval(() => setTick((t) => t + 1), everyMs);
    return () => clearInterval(id);
  }, [everyMs, active]);
  return Date.now();
}

/** The rendered width of an element (for drawings that must keep real pixel sizes). */
export function useWidth<E extends HTMLElement>(fallback: number): [(el: E | null) => void, number] {
  const [el, setEl] = useState<E | null>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    if (!el) return;
    setWidth(el.clientWidth || fallback);
    const ro = new ResizeObserver((entries) => {
      const w = entries[0]?.contentRect.width;
      if (w) setWidth(Math.round(w));
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, [el, fallback]);
  return [setEl, width];
}

/** `useRpcResource` wired to the shell's live stream. */
export function useLiveRpc<K extends MethodName>(
  method: K,
  params: ParamsOf<ProductMethods[K]>,
  events: readonly EventName[],
  pollWhile?: (d: ResultOf<ProductMethods[K]>) => boolean,
  pollWhenLive = false,
): Resource<ResultOf<ProductMethods[K]>> {
  const { live, liveState } = useShell();
  return useRpcResource(method, params, { live, liveState, events, pollWhenLive, ...(pollWhile ? { pollWhile } : {}) });
}
