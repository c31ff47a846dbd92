/**
 * The conscious world's contract (seed 3): actionable items digested from memory, their states,
 * and the run events. Browser-safe: zod and other protocol files only.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';

// ---- wire types ---------------------------------------------------------------------------

/** The seed's source values. */
export const ACTIONABLE_SOURCES = ['email', 'calendar', 'telegram', 'ai_insight', 'system', 'trading', 'security'] as const;
export type ActionableSource = (typeof ACTIONABLE_SOURCES)[number];
/** The seed's priorities, most urgent first. */
export const ACTIONABLE_PRIORITIES = ['critical', 'important', 'normal'] as const;
export type ActionablePriority = (typeof ACTIONABLE_PRIORITIES)[number];
export const ACTIONABLE_STATES = ['new', 'done', 'dismissed'] as const;
export type ActionableState = (typeof ACTIONABLE_STATES)[number];
/** At most this many actionables per run (the seed's rule); a longer reply is cut. */
export const MAX_ACTIONABLES_PER_RUN = 20;
/** The memory namespace actionables are written to, one document each (external id = the actionable's id). */
export const CONSCIOUS_NAMESPACE = 'conscious';

export interface Actionable {
  /** sha256(`title:source`), hex: the same item extracted again updates this row. */
  id: string;
  title: string;
  description: string;
  source: ActionableSource;
  priority: ActionablePriority;
  actionable: boolean;
  requires_confirmation: boolean;
  has_complex_action: boolean;
  /** A person's name for the source (Gmail, Telegram, Notion…). */
  source_label: string;
  /** `new` until the person marks it done or dismisses it; extraction never changes it back. */
  state: ActionableState;
  created_at: number;
  updated_at: number;
  /** When a run last extracted it. */
  last_seen_at: number;
  /** The run (tick id) that last extracted it. */
  run_id: string;
  /** Its memory document (`memory.get_document` / memory search find it there). */
  memory: { namespace: string; external_id: string };
  /**
   * The recalled memory document it came from (`memory.get_document`), matched by its words when
   * it was extracted; null when none covers it (a synthesized insight), or for items from before.
   */
  source_document: SourceDocumentRef | null;
}

/** A memory document an actionable names (`memory.get_document` opens it). */
export interface SourceDocumentRef {
  namespace: string;
  external_id: string;
  title: string;
}

export const RUN_STATUSES = ['running', 'completed', 'failed', 'interrupted'] as const;
export type ConsciousRunStatus = (typeof RUN_STATUSES)[number];

/** One run of the conscious loop (a tick that read memory; quiet ticks are not runs). */
export interface ConsciousRun {
  /** The tick id: `run_id` of the run's events. */
  id: string;
  /** `interrupted`: a newer run superseded it (its result was discarded). */
  status: ConsciousRunStatus;
  started_at: number;
  finished_at: number | null;
  /** Namespaces whose documents were read. */
  namespaces: string[];
  /** Documents recalled into the prompt. */
  documents: number;
  /** Actionables extracted, and how many of them were new. */
  count: number;
  new: number;
  /** Items beyond the 20 a run keeps (dropped). */
  cut: number;
  duration_ms: number | null;
  error: string | null;
  /** The model error kind (`malformed`, `timeout`, `unreachable`, …) or `error`. */
  error_kind: string | null;
}

// ---- events -------------------------------------------------------------------------------

/**
 * The seed's event protocol carried on our event names: `conscious.started` is the seed's
 * `conscious_loop:started` ({run_id, timestamp, namespaces}), `conscious.completed` its
 * `completed` ({run_id, actionable_count, duration_ms}), `conscious.error` its `error`
 * ({run_id, message, error_type}). `timestamp` is epoch ms; `count` and `kind` are the older
 * names of `actionable_count` and `error_type`, kept for existing listeners.
 */
export type ConsciousEvents = {
  'conscious.started': { run_id: string; timestamp: number; namespaces: string[] };
  'conscious.completed': {
    run_id: string;
    timestamp: number;
    namespaces: string[];
    actionable_count: number;
    count: number;
    new: number;
    /** Reworded or cross-source duplicates folded into another item. */
    merged: number;
    /** Items whose memory document could not be written (each one warned; the run went on). */
    insert_failures: number;
    duration_ms: number;
  };
  /** `error_type` (and `kind`): the model error kind (`malformed`, `timeout`, `unreachable`, …) or `error`. */
  'conscious.error': { run_id: string; timestamp: number; message: string; error_type: string; kind: string; duration_ms: number };
  /** Actionables were added, updated, done or dismissed (the page refreshes its list). */
  'conscious.actionables_changed': { ids: string[]; reason: 'extracted' | 'done' | 'dismissed' | 'reopened' };
};

// ---- the contract -------------------------------------------------------------------------

const id = z.string().regex(/^[0-9a-f]{64}$/, 'must be an actionable id (64 hex characters)');

export const consciousContract = defineContract<ConsciousEvents>()({
  methods: {
    'conscious.run': method(
      z.strictObject({ force: z.boolean().optional() }),
      'Start a conscious loop run now and return at once; {force: true} re-reads memory even when it did not change.',
    ).returns<{ started: boolean; message: string }>(),
    'conscious.list': method(
      z.strictObject({ state: z.enum(ACTIONABLE_STATES).optional(), limit: z.number().int().min(1).max(500).optional() }),
      'Actionables, most urgent first: {state? (default all), limit? (default 200)}.',
    ).returns<Actionable[]>(),
    'conscious.dismiss': method(z.strictObject({ id }), 'Dismiss an actionable: it stays dismissed when extracted again.').returns<Actionable>(),
    'conscious.complete': method(z.strictObject({ id }), 'Mark an actionable done.').returns<Actionable>(),
    'conscious.reopen': method(z.strictObject({ id }), 'Put a done or dismissed actionable back to new (undo).').returns<Actionable>(),
    'conscious.runs': method(
      z.strictObject({ limit: z.number().int().min(1).max(100, 'at most 100').optional() }),
      'The latest conscious loop runs, newest first: time, count, errors: {limit? (default 10)}.',
    ).returns<ConsciousRun[]>(),
  },
  events: ['conscious.started', 'conscious.completed', 'conscious.error', 'conscious.actionables_changed'],
});

export type ConsciousContract = typeof consciousContract;
export type ConsciousMethods = ConsciousContract['methods'];
