/**
 * `useRpcResource`: one RPC read kept fresh. It reloads when a named live event arrives (and on
 * every (re)connect), polls every 2 s while `pollWhile(data)` holds and the event stream is
 * down (seed 1: lists with `in_progress` rows), and lets actions apply optimistic changes. A read
 * the daemon did not answer (a dropped request, a busy machine) is tried again, 2 s then doubling
 * to 30 s, even while the event stream stays open: nothing else would bring it back.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { call, UnreachableError } from '../api/rpc.js';
import type { LiveEvents, LiveSnapshot } from '../api/live.js';
import type { ParamsOf, ProductEvents, ProductMethods, ResultOf } from '../../../src/protocol/index.js';

export type MethodName = keyof ProductMethods & string;
export type EventName = keyof ProductEvents & string;

export const POLL_MS = 2000;
const COALESCE_MS = 120;
const RETRY_MAX_MS = 30_000;

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): Promise<void>;
  /** Replace the data now (optimistic update); drops answers of reads already in flight. */
  mutate(fn: (current: T | undefined) => T | undefined): void;
}

export interface ResourceOptions<T> {
  live: LiveEvents;
  liveState: LiveSnapshot;
  /** Event types that mean this data changed. */
  events?: readonly EventName[];
  pollWhile?: (data: T) => boolean;
  /** Poll while `pollWhile` holds even with the stream open: for figures no event carries (a sync's progress). */
  pollWhenLive?: boolean;
}

export function useRpcResource<K extends MethodName, T extends ResultOf<ProductMethods[K]> = ResultOf<ProductMethods[K]>>(
  method: K,
  params: ParamsOf<ProductMethods[K]>,
  opts: ResourceOptions<T>,
): Resource<T> {
  const key = JSON.stringify(params);
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const seq = useRef(0);

  const reload = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const data = (await call(method, JSON.parse(key) as ParamsOf<ProductMethods[K]>)) as T;
      if (mine === seq.current) setState({ data, error: undefined, loading: false });
    } catch (error) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, [method, key]);

  const mutate = useCallback((fn: (current: T | undefined) => T | undefined) => {
    seq.current++;
    setState((s) => ({ ...s, data: fn(s.data) }));
  }, []);

  useEffect(() => {
    void reload();
  }, [reload]);

  const { live } = opts;
  const eventsKey = (opts.events ?? []).join(',');
  useEffect(() => {
    const wanted = new Set(eventsKey ? eventsKey.split(',') : []);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const off = live.subscribe((e) => {
      if (e.type !== 'hello' && !wanted.has(e.type)) return;
      if (timer !== null) return;
      timer = setTimeout(() => {
        timer = null;
        void reload();
      }, COALESCE_MS);
    });
    return () => {
      off();
      if (timer !== null) clearTimeout(timer);
    };
  }, [live, eventsKey, reload]);

  const { pollWhile } = opts;
  const shouldPoll =
    (opts.pollWhenLive === true || opts.liveState.state !== 'open') && state.data !== undefined && pollWhile !== undefined && pollWhile(state.data);
  useEffect(() => {
    if (!shouldPoll) return;
    const id = setInterval(() => void reload(), POLL_MS);
    return () => clearInterval(id);
  }, [shouldPoll, reload]);

  const unreachable = state.error instanceof UnreachableError;
  const retries = useRef(0);
  useEffect(() => {
    if (!unreachable) {
      retries.current = 0;
      return;
    }
    const id = setTimeout(() => void reload(), Math.min(RETRY_MAX_MS, POLL_MS * 2 ** retries.current++));
    return () => clearTimeout(id);
  }, [unreachable, state, reload]);

  return { ...state, reload, mutate };
}
