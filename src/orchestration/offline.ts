/**
 * Offline mode: seed 5's deterministic stand-ins, so the example needs no model, no network and
 * no database, and gives the same result every run.
 *
 *   retrieve   string matching of the instruction's content words over `long_term_memory`;
 *   execute    a simulated sub-agent: one entity trace, one world diff, and an escalation when
 *              the instruction carries critical anomaly terms;
 *   summarise  extractive (compress.ts), within budget by construction;
 *   steer      a directive from the gated summary's figures.
 *
 * With `steering` (a host that runs the steering world, such as the app) the subconscious layer
 * is that world, as in live mode: the reasoning stand-in is steered by its directive and the
 * `subconscious_eval` node reports the directive in force. Without it (the example) the stand-in
 * reflects itself and steers the next cycles with its own line.
 */
import { extractiveSummarizer } from './compress.js';
import type { EvictionDoc, HarnessRuntime, ReasoningInput, ReasoningResult } from './runtime.js';
import { firstSentence, keyTerms, oneLine, plural } from './text.js';
import type { MemoryRecord, RetrievedTrace, SteeringSource } from './types.js';

/** Terms that make the reasoning stand-in escalate (seed 5: "critical anomaly terms"). */
export const ANOMALY_TERMS = ['critical', 'anomaly', 'anomalous', 'outage', 'breach', 'incident', 'emergency', 'failure', 'failing', 'crash', 'corrupted'];

export interface OfflineRuntimeOptions {
  /** The steering world's directives; absent: the stand-in steers itself (`subconscious_steering`). */
  steering?: SteeringSource | undefined;
}

export function offlineRuntime(opts: OfflineRuntimeOptions = {}): HarnessRuntime {
  const { steering } = opts;
  return {
    mode: 'offline',
    subconscious: steering ? 'steering_world' : 'stand_in',
    instruct: async ({ channel, text }) => `Resolve the ${channel} request: ${oneLine(text, 280)}`,
    respond: async ({ channel, reply }) => `[${channel}] ${firstSentence(reply, 280)}`,
    retrieve: async (query, state, ctx) => ({ traces: retrieveByTerms(query, state.long_term_memory, ctx.settings.retrieval_limit) }),
    directive: async (cycle, state) => {
      if (steering) return steering.forCycle(cycle);
      return state.subconscious_steering ? { id: 'offline', text: state.subconscious_steering } : null;
    },
    execute: async (input) => simulateExecution(input),
    evict: async (docs) => docs.map(toRecord),
    summarize: (req) => extractiveSummarizer(req),
    steer: async (summary, state) => {
      if (steering) return state.directive?.text ?? null;
      const critical = [...state.cycle_diffs].reverse().find((d) => d.critical);
      if (summary.critical_event_count > 0) {
        return `Stabilise first: investigate the ${critical?.entity ?? 'reported'} anomaly before taking on new work.`;
      }
      if (summary.reasons.includes('cron')) return `Consolidate: ${summary.macro_trend}; fold repeated work into one plan.`;
      return `Keep course: ${summary.macro_trend}; batch related requests together.`;
    },
  };
}

/** Seed 5's mock retrieval: records ranked by how many of the query's content words they contain. */
export function retrieveByTerms(query: string, memory: readonly MemoryRecord[], limit: number): RetrievedTrace[] {
  const terms = keyTerms(query);
  if (!terms.length || limit <= 0) return [];
  const scored = memory
    .map((r, i) => {
      const hay = `${r.title} ${r.body}`.toLowerCase();
      return { r, i, score: terms.filter((t) => hay.includes(t)).length };
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || b.i - a.i);
  return scored.slice(0, limit).map(({ r, score }) => ({ id: r.id, title: r.title, snippet: oneLine(r.body, 200), score }));
}

/** Seed 5's simulated sub-agent execution with semantic extraction and one world diff. */
export function simulateExecution(input: ReasoningInput): ReasoningResult {
  const terms = keyTerms(input.text);
  const anomalies = keyTerms(input.instructions).filter((t) => ANOMALY_TERMS.includes(t));
  const entity = pickEntity(input.text, terms);
  const critical = anomalies.length > 0;
  const detail = terms.filter((t) => t !== entity).slice(0, 3);
  const reply = [
    `Handled ${entity}: ${sentence(oneLine(input.text, 200))}`,
    input.retrieved.length ? `Recalled ${plural(input.retrieved.length, 'trace')}: ${input.retrieved.map((r) => r.title).join('; ')}.` : '',
    input.directive ? `Steered by: ${input.directive.text}` : '',
    critical ? `Anomaly flagged (${anomalies.join(', ')}).` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return {
    reply,
    entities: [{ entity, trace: `cycle ${input.cycle}: ${critical ? 'anomaly' : 'handled'} — ${terms.slice(0, 8).join(' ') || 'no detail'}` }],
    diffs: [
      {
        entity,
        mutation: critical ? `${entity}: anomaly reported (${anomalies.join(', ')})` : `${entity}: request handled (${detail.join(', ') || 'no detail'})`,
        delta: critical ? 1 : Math.min(0.9, 0.1 + 0.05 * terms.length),
        critical,
      },
    ],
    escalate: critical ? `critical anomaly terms in the instruction: ${anomalies.join(', ')}` : null,
  };
}

/** Words that start requests rather than name what they are about. */
const VERBS = new Set([
  'draft',
  'send',
  'check',
  'write',
  'make',
  'create',
  'update',
  'tell',
  'ask',
  'asks',
  'find',
  'fix',
  'review',
  'confirm',
  'confirms',
  'plan',
  'prepare',
]);

/** The entity a request is about: the first capitalised content word (a name), else the first content word. */
export function pickEntity(text: string, terms: readonly string[] = keyTerms(text)): string {
  const usable = (t: string) => !ANOMALY_TERMS.includes(t) && !VERBS.has(t);
  for (const m of text.matchAll(/\b[A-Z][A-Za-z0-9_-]{2,}/g)) {
    const t = m[0].toLowerCase();
    if (terms.includes(t) && usable(t)) return t;
  }
  return terms.find(usable) ?? 'general';
}

/** End a sentence once. */
function sentence(text: string): string {
  return /[.!?…]$/.test(text) ? text : `${text}.`;
}

function toRecord(doc: EvictionDoc): MemoryRecord {
  return { id: doc.external_id, title: doc.title, body: doc.body, cycle: doc.entry.cycle };
}
