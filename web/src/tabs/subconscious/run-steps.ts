/**
 * Where a task's agent run is now (issue 23 §3), from the runner's own `agent.run` events (no new
 * event): asking the model (and which step), running a tool on its server, or waiting for the
 * person at the approval gate — with when that step began, so a row can say how long it has
 * gone on. Kept per run id since the view opened; a settled run is dropped.
 */
import { useEffect, useRef, useState } from 'react';
import type { LogEntry } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';

export type RunStep =
  | { kind: 'model'; step: number; since: number; after: { tool: string; server: string } | null }
  | { kind: 'tool'; step: number; since: number; tool: string; server: string }
  | { kind: 'waiting'; step: number; since: number; tool: string; server: string };

/** `fs__write_file` → `write_file` (the runner exposes MCP tools prefixed with their server). */
export function toolName(tool: string, server: string): string {
  return tool.startsWith(`${server}__`) ? tool.slice(server.length + 2) : tool;
}

/** The next step of a run after one `agent.run` event; `null` when the run settled. */
export function nextStep(prev: RunStep | undefined, data: Record<string, unknown>, at: number): RunStep | null | undefined {
  const step = prev?.step ?? 1;
  const tool = typeof data.tool === 'string' ? data.tool : '';
  const server = typeof data.server === 'string' ? data.server : '';
  switch (data.event) {
    case 'tool-call':
      return { kind: 'tool', step, since: at, tool: toolName(tool, server), server };
    case 'approval-requested': {
      const a = (data.approval ?? {}) as { tool?: unknown; server?: unknown };
      const s = typeof a.server === 'string' ? a.server : server;
      return { kind: 'waiting', step, since: at, tool: toolName(typeof a.tool === 'string' ? a.tool : tool, s), server: s };
    }
    case 'tool-result':
      return { kind: 'model', step, since: at, after: prev && prev.kind !== 'model' ? { tool: prev.tool, server: prev.server } : null };
    case 'step-finished':
      // The model answered step n; the next model call is step n + 1 (when there is one, its tools run first).
      return {
        kind: 'model',
        step: (typeof data.step === 'number' ? data.step : step) + 1,
        since: at,
        after: !prev ? null : prev.kind === 'model' ? prev.after : { tool: prev.tool, server: prev.server },
      };
    case 'settled':
      return null;
    default:
      return undefined; // text deltas and ledger rows do not change the step
  }
}

/** A run's step in words: "step 2: asking the model (after read_file on fs)". */
export function stepWords(s: RunStep): string {
  switch (s.kind) {
    case 'model':
      return `step ${s.step}: asking the model${s.after ? ` (after ${s.after.tool} on ${s.after.server})` : ''}`;
    case 'tool':
      return `step ${s.step}: running ${s.tool} on ${s.server}`;
    case 'waiting':
      return `step ${s.step}: waiting for you to answer ${s.tool} on ${s.server} (under Needs you)`;
  }
}

/** The steps of the runs seen since this view opened, by run id; re-renders at most once a frame. */
export function useRunSteps(): ReadonlyMap<string, RunStep> {
  const { live } = useShell();
  const steps = useRef(new Map<string, RunStep>());
  const [, setVersion] = useState(0);
  useEffect(() => {
    let frame: number | null = null;
    const off = live.subscribe((e) => {
      if (e.type !== 'agent.run') return;
      const data = e.data as Record<string, unknown> & { run_id: string };
      const next = nextStep(steps.current.get(data.run_id), data, Date.now());
      if (next === undefined) return;
      if (next === null) steps.current.delete(data.run_id);
      else steps.current.set(data.run_id, next);
      frame ??= requestAnimationFrame(() => {
        frame = null;
        setVersion((v) => v + 1);
      });
    });
    return () => {
      off();
      if (frame !== null) cancelAnimationFrame(frame);
    };
  }, [live]);
  return steps.current;
}

/** A row a run is carrying out now: its run id, else null. */
function carriedBy(r: LogEntry): string | null {
  return r.decision === 'in_progress' && r.exec_state === 'running' && r.run_id ? r.run_id : null;
}

/**
 * The first step of runs that began while this view watched (issue 23 §3): a run says nothing
 * until its first model call answers or asks for a tool, but its first step is known — step 1,
 * asking the model, since its row turned to carrying out — so the row says it at once. A run is
 * one that began while watching when its row turned to carrying out after the view's first look,
 * or its row was written after the newest row of that first look (store times only, so a clock
 * on another machine does not matter). Of a run already going when the view opened nothing is
 * known until its next event, and nothing is said. Its own events replace this (`useRunSteps`).
 */
export function useFirstSteps(entries: readonly LogEntry[] | undefined): ReadonlyMap<string, RunStep> {
  const look = useRef<{ rows: Map<string, string | null>; newest: number } | null>(null);
  const first = useRef(new Map<string, RunStep>());
  if (entries) {
    if (!look.current) {
      look.current = { rows: new Map(entries.map((r) => [r.id, carriedBy(r)])), newest: Math.max(0, ...entries.map((r) => r.created_at)) };
    } else {
      const seen = look.current;
      for (const r of entries) {
        const run = carriedBy(r);
        const before = seen.rows.get(r.id);
        const began = run !== null && (before === undefined ? r.created_at > seen.newest : before !== run);
        if (began && !first.current.has(run)) first.current.set(run, { kind: 'model', step: 1, since: r.updated_at, after: null });
        seen.rows.set(r.id, run);
      }
    }
  }
  return first.current;
}
