/**
 * The `conscious` world (seed 3) on the engine's `World` contract:
 *
 *   observe         (after the sources' first sync, when `ready` is given) quiet (0 tokens, no
 *                   write) unless memory changed since the last committed run: the memory store's
 *                   change sequence against a cursor in instance state; or a person asked for a
 *                   forced run.
 *   prepareContext  `conscious.started` and the run's row; recall each namespace (its latest documents); the seed's
 *                   prompt (CONSCIOUS_LOOP.md in the workspace overrides it); memory fenced.
 *   reflect         one `llm.object` call against the seed's schema (fails closed on malformed
 *                   output); at most 20 items.
 *   commit          upsert by sha256(title:source), states untouched; the cursor moves to what
 *                   was observed; the run's row; `conscious.completed`.
 *   abandon         `conscious.error` (message, kind) and the run's row marked failed; the cursor
 *                   stays, so the next run covers the same window. A superseded run is marked
 *                   interrupted.
 *
 * Everything it touches is injected (`createConsciousWorld(deps)`): its own tables, the memory
 * store, settings, clock, events. The tick context gives only llm, ids, log, signal and state.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError, describeError } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import type { AbandonReason, CommitInput, CommitSummary, Observation, TickContext, World } from '../../engine/types.js';
import type { ModelRole } from '../../llm/types.js';
import type { MemoryDocument, MemoryNamespace } from '../../protocol/memory.js';
import type { ConsciousSettings } from './config.js';
import type { ConsciousEmit } from './events.js';
import { loadPrompt, memoryPrompt, systemPrompt, type RecalledNamespace } from './prompt.js';
import { actionablesReplySchema, toActionables, type ExtractedActionable } from './schema.js';
import { ConsciousService } from './service.js';
import type { ConsciousTables } from './tables.js';

/** What the world needs of the memory store (`MemoryStore` has it). */
export interface ConsciousMemory {
  head(): Promise<number>;
  namespaces(): Promise<MemoryNamespace[]>;
  recent(opts: { namespace: string; limit: number }): Promise<MemoryDocument[]>;
}

export interface ConsciousWorldDeps {
  db: Kysely<ConsciousTables>;
  memory: ConsciousMemory;
  settings: ConsciousSettings | (() => ConsciousSettings);
  /** Where `CONSCIOUS_LOOP.md` is looked for. */
  workspace: string;
  clock: Clock;
  emit: ConsciousEmit;
  log?: Logger | undefined;
  /** The sources' first sync (`MemorySync.ready`): observe waits for it, so a one-shot tick sees the folders first. */
  ready?: ((signal: AbortSignal) => Promise<void>) | undefined;
}

export interface ConsciousObservation {
  /** The memory change sequence observed: the cursor moves here on commit. */
  head: number;
  /** The cursor when observed (0: never ran). */
  cursor: number;
  /** Namespaces holding documents (empty: nothing to read, the run completes with 0 items). */
  namespaces: string[];
  forced: boolean;
}

export interface ConsciousContext {
  system: string;
  prompt: string;
  promptSource: 'workspace' | 'built-in';
  namespaces: string[];
  documents: number;
  /** Namespaces whose recall failed (the run went on with the others). */
  skipped?: string[];
}

export interface ConsciousReflection {
  items: ExtractedActionable[];
  /** Items beyond the seed's 20 that were dropped. */
  cut: number;
  /** What was read (for the run's record; absent in a checkpoint from an older version). */
  namespaces?: string[];
  documents?: number;
  /** Namespaces whose recall failed and were left out (the summary says so). */
  skipped?: string[];
}

export type ConsciousWorld = World<ConsciousObservation, ConsciousContext, ConsciousReflection> & {
  readonly service: ConsciousService;
  /** The wait before the first run after start (seed 3: 60 s for sources to boot; the engine honours it). */
  initialDelayMs(): number;
};

/** Instance-state key of the memory change sequence the last committed run covered. */
export const CURSOR_KEY = 'cursor';

export function createConsciousWorld(deps: ConsciousWorldDeps): ConsciousWorld {
  const settings = (): ConsciousSettings => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const service = new ConsciousService({ db: deps.db, clock: deps.clock, emit: deps.emit });
  const log = deps.log ?? silentLogger;

  async function observe(ctx: TickContext): Promise<Observation<ConsciousObservation>> {
    await deps.ready?.(ctx.signal);
    const forced = service.forced;
    const [stored, head] = await Promise.all([ctx.state.get<number>(CURSOR_KEY), deps.memory.head()]);
    const cursor = stored ?? 0;
    // The quiet path: two reads, no write, no model call.
    if (!forced && head <= cursor) return { quiet: true, tainted: false, data: { head, cursor, namespaces: [], forced } };
    const namespaces = (await deps.memory.namespaces()).filter((n) => n.documents > 0).map((n) => n.namespace);
    // Memory is external content: a run reacting to it is tainted (it has no tools either way).
    return { quiet: namespaces.length === 0, tainted: true, data: { head, cursor, namespaces, forced } };
  }

  async function prepareContext(ctx: TickContext, observation: Observation<ConsciousObservation>): Promise<ConsciousContext> {
    const s = settings();
    const { namespaces } = observation.data;
    deps.emit('conscious.started', { run_id: ctx.tickId, namespaces });
    await service.runs.started(ctx.tickId, ctx.startedAt, namespaces);
    const all = new Map((await deps.memory.namespaces()).map((n) => [n.namespace, n]));
    const recalled: RecalledNamespace[] = [];
    const failed: string[] = [];
    let read = 0;
    for (const name of namespaces) {
      const ns = all.get(name);
      if (!ns) continue;
      try {
        const documents = await deps.memory.recent({ namespace: name, limit: s.documents_per_namespace });
        read++;
        if (documents.length) recalled.push({ namespace: ns, documents });
      } catch (err) {
        // The seed: one source's recall failing is a warning; the others still count.
        failed.push(name);
        ctx.log.warn({ namespace: name, err: describeError(err) }, 'conscious: recall failed for a namespace; skipped');
      }
    }
    // Nothing could be read: fail the run, so the cursor stays and the next run covers this memory.
    if (failed.length > 0 && read === 0) {
      throw new SubconsciousError('recall_failed', `Recall failed for every namespace (${failed.join(', ')}).`, {
        hint: 'The memory store could not be read; the next run covers the same memory.',
        details: { namespaces: failed },
      });
    }
    const prompt = await loadPrompt(deps.workspace, s.prompt_file);
    return {
      system: systemPrompt(prompt),
      prompt: memoryPrompt(recalled, ctx.clock.now(), s.document_max_chars),
      promptSource: prompt.source,
      namespaces: recalled.map((r) => r.namespace.namespace),
      documents: recalled.reduce((n, r) => n + r.documents.length, 0),
      ...(failed.length ? { skipped: failed } : {}),
    };
  }

  async function reflect(ctx: TickContext, context: ConsciousContext): Promise<ConsciousReflection> {
    const read = { namespaces: context.namespaces, documents: context.documents, ...(context.skipped?.length ? { skipped: context.skipped } : {}) };
    if (context.documents === 0) return { items: [], cut: 0, ...read };
    const s = settings();
    const { value, text } = await ctx.llm.object(
      { world: ctx.world, purpose: 'conscious_extract', role: s.role, model: s.model, signal: ctx.signal },
      { system: context.system, prompt: context.prompt, schema: actionablesReplySchema, temperature: 0.2 },
    );
    ctx.log.info({ response: text.slice(0, 4000), promptSource: context.promptSource }, 'conscious: model response');
    const result = toActionables(value);
    if (result.cut > 0) ctx.log.warn({ dropped: result.cut, kept: result.items.length }, 'conscious: reply had more than 20 items; cut to 20');
    return { ...result, ...read };
  }

  async function commit(ctx: TickContext, input: CommitInput<ConsciousObservation, ConsciousReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    const { head, cursor, forced } = observation.data;
    const ran = !observation.quiet || observation.data.namespaces.length === 0;
    if (observation.quiet && !forced && head <= cursor) return { summary: 'memory unchanged: nothing to read', counts: { actionables: 0 } };
    const now = ctx.clock.now();
    const items = reflection?.items ?? [];
    const fresh = await service.actionables.upsert(items, ctx.tickId, now);
    const retention = settings().retention_days;
    if (retention > 0) await service.actionables.prune(now - retention * 86_400_000);
    if (head > cursor) await ctx.state.set(CURSOR_KEY, head);
    if (forced) service.clearForce();
    if (ran) {
      await service.runs.completed(ctx.tickId, ctx.startedAt, now, {
        namespaces: reflection?.namespaces ?? observation.data.namespaces,
        documents: reflection?.documents ?? 0,
        count: items.length,
        new: fresh.length,
        cut: reflection?.cut ?? 0,
      });
      deps.emit('conscious.completed', { run_id: ctx.tickId, count: items.length, new: fresh.length, duration_ms: Math.max(0, now - ctx.startedAt) });
    }
    if (items.length) deps.emit('conscious.actionables_changed', { ids: items.map((i) => i.id), reason: 'extracted' });
    const cut = reflection?.cut ? ` (${reflection.cut} beyond 20 dropped)` : '';
    const skipped = reflection?.skipped?.length ? `; recall failed for ${reflection.skipped.join(', ')}, skipped` : '';
    return {
      summary: observation.quiet
        ? 'memory changed but holds no documents: nothing to read'
        : `${items.length} actionable${items.length === 1 ? '' : 's'} (${fresh.length} new)${cut}${skipped}`,
      counts: { actionables: items.length, new: fresh.length },
    };
  }

  async function abandon(ctx: TickContext, reason: AbandonReason, _observation: Observation<ConsciousObservation> | undefined, error: unknown): Promise<void> {
    if (reason === 'shutdown') return;
    if (reason === 'superseded') return service.runs.interrupted(ctx.tickId, ctx.clock.now());
    const message = describeError(error) || `run ${reason}`;
    const kind = reason === 'timeout' ? 'timeout' : errorKind(error);
    log.warn({ run: ctx.tickId, err: message }, 'conscious loop run failed; the next run covers the same memory');
    await service.runs.failed(ctx.tickId, ctx.startedAt, ctx.clock.now(), message, kind);
    deps.emit('conscious.error', { run_id: ctx.tickId, message, kind });
  }

  const world: ConsciousWorld = {
    kind: 'conscious',
    get roles(): readonly ModelRole[] {
      return [settings().role];
    },
    service,
    intervalMinutes: () => settings().interval_minutes,
    initialDelayMs: () => settings().initial_delay_seconds * 1000,
    observe,
    prepareContext,
    reflect,
    commit,
    abandon,
  };
  return world;
}

/** The model error kind (`malformed`, `timeout`, …), an error code without `model_`, or `error`. */
function errorKind(err: unknown): string {
  const e = err as { kind?: unknown; code?: unknown } | null;
  if (typeof e?.kind === 'string') return e.kind;
  if (typeof e?.code === 'string') return e.code.replace(/^model_/, '');
  return 'error';
}
