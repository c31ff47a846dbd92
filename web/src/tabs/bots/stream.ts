/**
 * Text that streams in: `bots.message_delta` events (and the run's tool calls, `bots.tool_step`),
 * kept per message since this view opened,
 * joined with the text the daemon has stored (written every `stream_flush_ms`, so it may lag the
 * deltas or, for a view opened mid-stream, start before them).
 */
import { useEffect, useRef, useState } from 'react';
import { useShell } from '../../shell/context.js';

/** A tool call of a running reply (`bots.tool_step`), as far as it got. */
export interface LiveStep {
  id: string;
  tool: string;
  /** null while it runs (or waits for an approval). */
  outcome: string | null;
}

/** Deltas and tool steps received per message id (of one thread), and a version that changes on each. */
export function useDeltas(threadId: string | null): { deltas: ReadonlyMap<string, string>; steps: ReadonlyMap<string, LiveStep[]>; version: number } {
  const { live } = useShell();
  const deltas = useRef(new Map<string, string>());
  const steps = useRef(new Map<string, LiveStep[]>());
  const [version, setVersion] = useState(0);
  useEffect(() => {
    deltas.current = new Map();
    steps.current = new Map();
    setVersion((v) => v + 1);
    if (!threadId) return;
    let frame: number | null = null;
    const off = live.subscribe((e) => {
      if (e.type === 'bots.message_delta') {
        const { thread_id, message_id: id, delta } = e.data;
        if (thread_id !== threadId) return;
        deltas.current.set(id, (deltas.current.get(id) ?? '') + delta);
      } else if (e.type === 'bots.tool_step') {
        const { thread_id, message_id: id, tool_call_id: callId, tool, outcome } = e.data;
        if (thread_id !== threadId) return;
        const list = steps.current.get(id) ?? [];
        const step = list.find((s) => s.id === callId);
        if (step) step.outcome = outcome ?? step.outcome;
        else list.push({ id: callId, tool, outcome });
        steps.current.set(id, list);
      } else return;
      // One render per frame however fast the deltas come.
      frame ??= requestAnimationFrame(() => {
        frame = null;
        setVersion((v) => v + 1);
      });
    });
    return () => {
      off();
      if (frame !== null) cancelAnimationFrame(frame);
    };
  }, [live, threadId]);
  return { deltas: deltas.current, steps: steps.current, version };
}

/**
 * The best text to show: the stored text and the deltas seen since the view opened, overlapped
 * where they meet (the stored text is a prefix of the whole, the deltas a suffix).
 */
export function joinStreamed(stored: string, streamed: string | undefined): string {
  if (!streamed) return stored;
  if (streamed.length >= stored.length && streamed.startsWith(stored)) return streamed;
  if (stored.endsWith(streamed)) return stored;
  const max = Math.min(stored.length, streamed.length);
  for (let k = max; k > 0; k--) {
    if (stored.endsWith(streamed.slice(0, k))) return stored + streamed.slice(k);
  }
  return stored + streamed;
}
