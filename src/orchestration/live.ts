/**
 * Live mode: the same nodes on real services.
 *
 *   quick tier      the `local` model through `Llm` (instruction, then channel response);
 *   reasoning tier  a full-effort run on the agent runner, steered by the current directive in its
 *                   system prompt (or the default line), tainted (channel text is outside content);
 *   retrieval       the memory store's recall (`Retriever`); a failing recall degrades to none;
 *   eviction        memory documents (`EvictionSink`), written by the service after the cycle
 *                   committed; a failing store leaves the traces in the state
 *                   (`unstored_evictions`) for the next commit to write, so none is lost;
 *   compression     the `local` model summarises; compress.ts enforces the budget;
 *   subconscious    the steering world reviews the forwarded history (the service asks for a
 *                   review once the cycle is committed); the node reports the steering in force.
 */
import { SubconsciousError, describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { cleanLine, stripControlLines } from '../llm/fence.js';
import type { Llm } from '../llm/types.js';
import type { CycleContext, HarnessRuntime } from './runtime.js';
import { simulateExecution } from './offline.js';
import {
  QUICK_INSTRUCT_SYSTEM,
  QUICK_RESPOND_SYSTEM,
  compressPrompt,
  compressSystem,
  instructPrompt,
  parseReasoningAnswer,
  reasoningPrompt,
  reasoningSystem,
  respondPrompt,
} from './prompts.js';
import { firstSentence, oneLine } from './text.js';
import type { EvictionSink, ReasoningAgent, Retriever, SteeringSource } from './types.js';

export const HARNESS_WORLD = 'orchestration';

export interface LiveRuntimeDeps {
  llm: Llm;
  agent: ReasoningAgent;
  retriever: Retriever;
  eviction: EvictionSink;
  /** The steering world's directives; absent: the default line always. */
  steering?: SteeringSource | undefined;
  log: Logger;
  /** The ledger's `world` for the harness's calls (default `orchestration`). */
  world?: string | undefined;
}

export function liveRuntime(deps: LiveRuntimeDeps): HarnessRuntime {
  const world = deps.world ?? HARNESS_WORLD;
  const call = (purpose: string, ctx: CycleContext) => ({ world, purpose, role: 'local' as const, signal: ctx.signal });

  return {
    mode: 'live',
    subconscious: 'steering_world',

    async instruct({ channel, text, recent }, ctx) {
      const { text: out } = await deps.llm.text(call('quick_instruct', ctx), {
        system: QUICK_INSTRUCT_SYSTEM,
        prompt: instructPrompt(channel, text, recent),
        maxOutputTokens: 200,
        temperature: 0.2,
      });
      const instruction = cleanLine(stripThink(out), 1000);
      return instruction || `Resolve the ${channel} request: ${oneLine(text, 280)}`;
    },

    async respond({ channel, text, instructions, reply }, ctx) {
      const { text: out } = await deps.llm.text(call('quick_respond', ctx), {
        system: QUICK_RESPOND_SYSTEM,
        prompt: respondPrompt(channel, text, instructions, reply),
        maxOutputTokens: 600,
        temperature: 0.3,
      });
      const response = stripControlLines(stripThink(out)).trim().slice(0, 4000);
      return response || firstSentence(reply, 280) || '(no reply)';
    },

    async retrieve(query, _state, ctx) {
      const limit = ctx.settings.retrieval_limit;
      if (limit <= 0 || !query.trim()) return { traces: [] };
      try {
        const hits = await deps.retriever.recall({ query: query.slice(0, 500), namespace: ctx.settings.recall_namespace, limit });
        return {
          traces: hits.slice(0, limit).map((h) => ({
            id: `${h.namespace}/${h.external_id}`,
            title: oneLine(h.title, 120),
            snippet: oneLine(h.snippet, 300),
            score: h.score,
          })),
        };
      } catch (err) {
        // Memory being down must not stop the channel: the cycle goes on without it, and says so.
        deps.log.warn({ err: describeError(err) }, 'memory recall failed; continuing without retrieved context');
        return { traces: [], note: `retrieval failed: ${oneLine(describeError(err), 200)}` };
      }
    },

    directive: async (cycle) => (deps.steering ? deps.steering.forCycle(cycle) : null),

    async execute(input, ctx) {
      const run = deps.agent.start({
        world,
        purpose: 'reasoning',
        system: reasoningSystem(input.directive),
        prompt: reasoningPrompt(input),
        mode: 'tainted',
        attended: false,
        title: oneLine(input.instructions, 120),
        ...(ctx.settings.servers ? { servers: ctx.settings.servers } : {}),
        signal: ctx.signal,
      });
      const outcome = await run.settled;
      if (outcome.status !== 'done') {
        throw new SubconsciousError(
          outcome.status === 'cancelled' ? 'cancelled' : 'model_error',
          `The reasoning run ${outcome.status}: ${outcome.error ?? 'no reason given'}`,
          {
            hint: 'The cycle failed and the harness state was left as it was; send the message again once the agent model answers.',
            details: { run_id: run.id },
          },
        );
      }
      const parsed = parseReasoningAnswer(outcome.text);
      // Trailer lines the model left out are filled in deterministically, so every cycle adds to
      // the semantic history and the diff queue the gate counts.
      const fallback = simulateExecution(input);
      const reply = parsed.reply || '(the reasoning tier returned no text)';
      const entities = parsed.entities.length ? parsed.entities : [{ entity: fallback.entities[0]!.entity, trace: firstSentence(reply, 300) }];
      const diffs = parsed.diffs.length
        ? parsed.diffs.map((d) => ({ ...d, entity: d.entity || entities[0]!.entity }))
        : [{ entity: entities[0]!.entity, mutation: `${entities[0]!.entity}: ${firstSentence(reply, 160)}`, delta: 0.2, critical: false }];
      return { reply, entities, diffs, escalate: parsed.escalate };
    },

    // The state keeps nothing; the memory store gets the docs once the cycle committed.
    evict: async () => [],

    async storeEvicted(docs, ctx) {
      for (const doc of docs) {
        await deps.eviction.store({
          namespace: ctx.settings.memory_namespace,
          external_id: doc.external_id,
          title: doc.title,
          body: doc.body,
          metadata: { source: 'orchestration', kind: 'semantic_trace', entity: doc.entry.entity, cycle: doc.entry.cycle, evicted_at: ctx.now() },
        });
      }
    },

    async summarize(req, ctx) {
      const { text } = await deps.llm.text(call('compress', ctx), {
        system: compressSystem(req.budgetTokens),
        prompt: compressPrompt(req.text),
        maxOutputTokens: Math.max(16, Math.ceil(req.budgetTokens * 2)),
        temperature: 0,
      });
      return stripControlLines(stripThink(text)).trim();
    },

    steer: async (_summary, state) => state.directive?.text ?? null,
  };
}

/** A reasoning model's leading `<think>` block is not part of its answer. */
function stripThink(text: string): string {
  return text.replace(/^\s*<think>[\s\S]*?<\/think>\s*/i, '');
}
