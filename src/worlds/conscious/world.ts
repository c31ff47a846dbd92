/**
 * The `conscious` world (seed 3) on the engine's `World` contract:
 *
 *   observe         (after the sources' first sync, when `ready` is given) quiet (0 tokens, no
 *                   write) unless memory changed since the last committed run: the memory store's
 *                   change sequence against a cursor in instance state; or a person asked for a
 *                   forced run.
 *                   Its own `conscious` namespace (the actionables it wrote) is neither a change
 *                   nor read back.
 *   prepareContext  `conscious.started` and the run's row; recall each namespace (its newest
 *                   documents, within the context budget: prompt.ts); the seed's prompt
 *                   (CONSCIOUS_LOOP.md in the workspace overrides it); memory fenced.
 *   reflect         one `llm.object` call against the seed's schema (fails closed on malformed
 *                   output); at most 20 items; duplicates merged (dedup.ts: reworded, or the
 *                   same item from several sources).
 *   commit          a reworded item takes the id of the stored one it matches; upsert by id,
 *                   states untouched; each item written into memory as a `conscious` document
 *                   (memory-link.ts; one failed write warns and the run goes on); the cursor moves
 *                   to what was observed; the run's row; `conscious.completed`.
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
import { documentRef, loadPrompt, memoryPrompt, systemPrompt, type RecalledNamespace } from './prompt.js';
import { actionablesReplySchema, toActionables, type ExtractedActionable } from './schema.js';
import { matchStored, mergeDuplicates } from './dedup.js';
import { matchSourceDocuments, sourceCandidate, type SourceCandidate } from './source-match.js';
import { CONSCIOUS_NAMESPACE, ActionableMemoryLink, type ConsciousMemoryWriter } from './memory-link.js';
import { ConsciousService } from './service.js';
import type { ConsciousTables } from './tables.js';

/** What the world needs of the memory store (`MemoryStore` has it). */
export interface ConsciousMemory extends ConsciousMemoryWriter {
  head(): Promise<number>;
  /** With `except`, changes to that namespace do not count. */
  changedSince(seq: number, opts?: { except?: string | undefined }): Promise<boolean>;
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
  /** Only its own `conscious` documents changed since the cursor: commit moves the cursor, nothing is read. */
  own?: boolean;
}

export interface ConsciousContext {
  system: string;
  prompt: string;
  promptSource: 'workspace' | 'built-in';
  namespaces: string[];
  documents: number;
  /** Namespaces whose recall failed (the run went on with the others). */
  skipped?: string[];
  /** The recalled documents, for each item's source document (absent in a checkpoint from an older version). */
  sources?: SourceCandidate[];
}

export interface ConsciousReflection {
  items: ExtractedActionable[];
  /** Items beyond the seed's 20 that were dropped. */
  cut: number;
  /** Duplicates folded into another item of the reply (absent in a checkpoint from an older version). */
  merged?: number;
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
const UNCHANGED = 'memory unchanged: nothing to read';

export function createConsciousWorld(deps: ConsciousWorldDeps): ConsciousWorld {
  const settings = (): ConsciousSettings => (typeof deps.settings === 'function' ? deps.settings() : deps.settings);
  const log = deps.log ?? silentLogger;
  const link = new ActionableMemoryLink(deps.memory, log);
  const service = new ConsciousService({ db: deps.db, clock: deps.clock, emit: deps.emit, link });

  /** Before the lease: memory unchanged since the cursor (the quiet path's two reads) needs no tick at all. */
  async function probe(ctx: TickContext): Promise<string | null> {
    if (service.forced) return null;
    await deps.ready?.(ctx.signal);
    const [stored, head] = await Promise.all([ctx.state.get<number>(CURSOR_KEY), deps.memory.head()]);
    return head <= (stored ?? 0) ? UNCHANGED : null;
  }

  async function observe(ctx: TickContext): Promise<Observation<ConsciousObservation>> {
    await deps.ready?.(ctx.signal);
    const forced = service.forced;
    const [stored, head] = await Promise.all([ctx.state.get<number>(CURSOR_KEY), deps.memory.head()]);
    const cursor = stored ?? 0;
    // The quiet path: two reads, no write, no model call.
    if (!forced && head <= cursor) return { quiet: true, tainted: false, data: { head, cursor, namespaces: [], forced } };
    // Only its own actionables changed (a run's writes, a person's done or dismiss): nothing to read.
    if (!forced && !(await deps.memory.changedSince(cursor, { except: CONSCIOUS_NAMESPACE })))
      return { quiet: true, tainted: false, data: { head, cursor, namespaces: [], forced, own: true } };
    const namespaces = (await deps.memory.namespaces()).filter((n) => n.documents > 0 && n.namespace !== CONSCIOUS_NAMESPACE).map((n) => n.namespace);
    // Memory is external content: a run reacting to it is tainted (it has no tools either way).
    return { quiet: namespaces.length === 0, tainted: true, data: { head, cursor, namespaces, forced } };
  }

  async function prepareContext(ctx: TickContext, observation: Observation<ConsciousObservation>): Promise<ConsciousContext> {
    const s = settings();
    const { namespaces } = observation.data;
    deps.emit('conscious.started', { run_id: ctx.tickId, timestamp: ctx.clock.now(), namespaces });
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
      prompt: memoryPrompt(recalled, ctx.clock.now(), {
        budgetTokens: s.context_budget_tokens,
        maxChars: s.document_max_chars,
        minChars: s.document_min_chars,
      }),
      promptSource: prompt.source,
      namespaces: recalled.map((r) => r.namespace.namespace),
      documents: recalled.reduce((n, r) => n + r.documents.length, 0),
      ...(failed.length ? { skipped: failed } : {}),
      sources: recalled.flatMap((r, n) => r.documents.map((d, i) => sourceCandidate(d, documentRef(n, i)))),
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
    const { items, merged } = mergeDuplicates(result.items);
    return { items: matchSourceDocuments(items, context.sources ?? []), cut: result.cut, merged, ...read };
  }

  async function commit(ctx: TickContext, input: CommitInput<ConsciousObservation, ConsciousReflection>): Promise<CommitSummary> {
    const { observation, reflection } = input;
    const { head, cursor, forced } = observation.data;
    const ran = !observation.quiet || observation.data.namespaces.length === 0;
    if (observation.data.own) {
      await ctx.state.set(CURSOR_KEY, head);
      return { summary: 'memory unchanged (only its own actionables): nothing to read', counts: { actionables: 0 } };
    }
    if (observation.quiet && !forced && head <= cursor) return { summary: UNCHANGED, counts: { actionables: 0 } };
    const now = ctx.clock.now();
    // A reworded item keeps the id (and the state) of the stored item it matches.
    const items = matchStored(reflection?.items ?? [], await service.actionables.titles());
    const fresh = await service.actionables.upsert(items, ctx.tickId, now);
    const failed = await link.write(await service.actionables.getMany(items.map((i) => i.id)));
    const retention = settings().retention_days;
    if (retention > 0) await link.remove(await service.actionables.prune(now - retention * 86_400_000));
    await ctx.state.set(CURSOR_KEY, await cursorAfterOwnWrites(head, cursor));
    if (forced) service.clearForce();
    if (ran) {
      const namespaces = reflection?.namespaces ?? observation.data.namespaces;
      await service.runs.completed(ctx.tickId, ctx.startedAt, now, {
        namespaces,
        documents: reflection?.documents ?? 0,
        count: items.length,
        new: fresh.length,
        cut: reflection?.cut ?? 0,
      });
      deps.emit('conscious.completed', {
        run_id: ctx.tickId,
        timestamp: now,
        namespaces,
        actionable_count: items.length,
        count: items.length,
        new: fresh.length,
        merged: reflection?.merged ?? 0,
        insert_failures: failed.length,
        duration_ms: Math.max(0, now - ctx.startedAt),
      });
    }
    if (items.length) deps.emit('conscious.actionables_changed', { ids: items.map((i) => i.id), reason: 'extracted' });
    const cut = reflection?.cut ? ` (${reflection.cut} beyond 20 dropped)` : '';
    const merged = reflection?.merged ? `; ${reflection.merged} duplicate${reflection.merged === 1 ? '' : 's'} merged` : '';
    const skipped = reflection?.skipped?.length ? `; recall failed for ${reflection.skipped.join(', ')}, skipped` : '';
    const unwritten = failed.length ? `; ${failed.length} not written into memory (see the log)` : '';
    return {
      summary: observation.quiet
        ? 'memory changed but holds no documents: nothing to read'
        : `${items.length} actionable${items.length === 1 ? '' : 's'} (${fresh.length} new)${cut}${merged}${skipped}${unwritten}`,
      counts: { actionables: items.length, new: fresh.length },
    };
  }

  /**
   * The cursor after this run: past its own memory writes when nothing else changed since what
   * it observed (so they do not wake the next run), else what it observed (the other change is
   * read next time). The head is read before the check, so a change after it is never skipped.
   */
  async function cursorAfterOwnWrites(observed: number, cursor: number): Promise<number> {
    const now = await deps.memory.head();
    if (now > observed && !(await deps.memory.changedSince(observed, { except: CONSCIOUS_NAMESPACE }))) return now;
    return Math.max(observed, cursor);
  }

  async function abandon(ctx: TickContext, reason: AbandonReason, _observation: Observation<ConsciousObservation> | undefined, error: unknown): Promise<void> {
    if (reason === 'shutdown') return;
    if (reason === 'superseded') return service.runs.interrupted(ctx.tickId, ctx.clock.now());
    const message = describeError(error) || `run ${reason}`;
    const kind = reason === 'timeout' ? 'timeout' : errorKind(error);
    log.warn({ run: ctx.tickId, err: message }, 'conscious loop run failed; the next run covers the same memory');
    const now = ctx.clock.now();
    await service.runs.failed(ctx.tickId, ctx.startedAt, now, message, kind);
    deps.emit('conscious.error', { run_id: ctx.tickId, timestamp: now, message, error_type: kind, kind, duration_ms: Math.max(0, now - ctx.startedAt) });
  }

  const world: ConsciousWorld = {
    kind: 'conscious',
    probe,
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
