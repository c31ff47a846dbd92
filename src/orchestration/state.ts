/**
 * The state's lifecycle: the initial state, the one reducer every node's patch goes through, the
 * reset at the start of a cycle, and the context-utilisation measure.
 */
import type { InboundPacket, StatePatch, SystemState } from './types.js';
import { GENESIS_SIGNATURE } from './world-diff.js';

export const MAX_MESSAGES = 50;
export const MAX_EVENT_LOG = 200;
/** Offline long-term memory keeps the newest records. */
export const MAX_LONG_TERM_MEMORY = 500;
/** A safety cap: eviction normally keeps semantic history far below it. */
export const MAX_SEMANTIC_HISTORY = 200;

export function initialState(seed: Partial<SystemState> = {}): SystemState {
  return {
    messages: [],
    agent_instructions: null,
    agent_reply: null,
    channel_response: null,
    semantic_history: [],
    sequential_diffs: [],
    gated_world_summary: null,
    context_utilization: 0,
    trigger_subconscious: false,
    cron_due: false,
    long_term_memory: [],
    retrieved_context: [],
    subconscious_steering: null,
    event_log: [],
    cycle: 0,
    inbound: null,
    path: [],
    world_signature: GENESIS_SIGNATURE,
    cycle_diffs: [],
    gate: null,
    evictions: [],
    escalation: null,
    directive: null,
    compressed: null,
    ...seed,
  };
}

/**
 * The single fan-in point: `messages`, `event_log` and `path` append (capped to their newest
 * entries); every other field in the patch replaces the current value. Pure and deterministic.
 */
export function applyPatch(state: SystemState, patch: StatePatch): SystemState {
  const next: SystemState = { ...state };
  for (const [key, value] of Object.entries(patch) as [keyof SystemState, unknown][]) {
    if (value === undefined) continue;
    switch (key) {
      case 'messages':
        next.messages = [...state.messages, ...(value as SystemState['messages'])].slice(-MAX_MESSAGES);
        break;
      case 'event_log':
        next.event_log = [...state.event_log, ...(value as string[])].slice(-MAX_EVENT_LOG);
        break;
      case 'path':
        next.path = [...state.path, ...(value as SystemState['path'])];
        break;
      case 'long_term_memory':
        next.long_term_memory = (value as SystemState['long_term_memory']).slice(-MAX_LONG_TERM_MEMORY);
        break;
      case 'semantic_history':
        next.semantic_history = (value as SystemState['semantic_history']).slice(-MAX_SEMANTIC_HISTORY);
        break;
      default:
        (next as unknown as Record<string, unknown>)[key] = value;
    }
  }
  return next;
}

/**
 * A new cycle over the committed state: the packet to ingest, and the per-cycle fields reset.
 * What carries across cycles: messages, semantic history, queued diffs, utilisation, triggers,
 * long-term memory, steering, the event log and the diff chain.
 */
export function startCycle(
  prev: SystemState,
  packet: InboundPacket,
  seq: number,
  opts: { cronDue?: boolean | undefined; now?: number | undefined; consolidateEveryMs?: number | undefined } = {},
): SystemState {
  // The harness's own cron trigger: a review is due once the interval passed since the last one.
  const anchor = prev.consolidated_at ?? null;
  const every = opts.consolidateEveryMs ?? 0;
  const scheduled = every > 0 && anchor !== null && opts.now !== undefined && opts.now - anchor >= every;
  return {
    ...prev,
    consolidated_at: anchor ?? opts.now ?? null,
    cycle: seq,
    inbound: packet,
    agent_instructions: null,
    agent_reply: null,
    channel_response: null,
    gated_world_summary: null,
    retrieved_context: [],
    cron_due: prev.cron_due || opts.cronDue === true || scheduled,
    path: [],
    cycle_diffs: [],
    gate: null,
    evictions: [],
    escalation: null,
    directive: null,
    compressed: null,
  };
}

/**
 * Tokens of the operational memory the reasoning tier carries: the active semantic history, the
 * retrieved traces and the queued diffs (the channel's messages are the quick tier's, not counted).
 */
export function activeContextTokens(s: Pick<SystemState, 'semantic_history' | 'retrieved_context' | 'sequential_diffs'>): number {
  let chars = 0;
  for (const e of s.semantic_history) chars += e.entity.length + e.trace.length + 4;
  for (const r of s.retrieved_context) chars += r.title.length + r.snippet.length + 4;
  for (const d of s.sequential_diffs) chars += d.entity.length + d.mutation.length + 24;
  return Math.ceil(chars / 4);
}

export function utilization(tokens: number, windowTokens: number): number {
  if (windowTokens <= 0) return 1;
  return Math.round(Math.min(1, tokens / windowTokens) * 1000) / 1000;
}
