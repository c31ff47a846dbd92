/**
 * The steering synthesis (seed 4's tinyplace reflect): one tool-free `llm.text` call at
 * temperature 0.3 over the fenced compressed history and world timeline. Isolation is structural:
 * this file (and everything it imports) reaches no agent, channel or tool module — the test walks
 * its import graph.
 *
 * The answer is `STEERING_DIRECTIVE: <imperative>`, optionally with `expires_after_cycles: N`
 * (default 20), or `NONE` (idle, not an error). An answer with neither is asked again once; a
 * second such answer throws, so the engine counts the tick as failed and the cursor stays.
 */
import { SubconsciousError } from '../../core/errors.js';
import { UNTRUSTED_PREAMBLE, cleanLine, fence } from '../../llm/fence.js';
import type { Llm, ModelRole } from '../../llm/types.js';
import type { CompressedRow, SteeringReflection, WorldDiffRow } from './types.js';

export const STEERING_TEMPERATURE = 0.3;
export const MAX_DIRECTIVE_CHARS = 900;
export const DEFAULT_EXPIRES_AFTER_CYCLES = 20;
export const MAX_EXPIRES = 1000;
/** Compressed rows one review reads. */
export const REVIEW_BATCH = 20;
/** World mutations one review reads. */
export const REVIEW_MUTATIONS = 20;

export const STEERING_SYSTEM = [
  'You are the deep reflection layer of an orchestration harness. You read a compressed history of its recent cycles and the timeline of world-state mutations,',
  'and you steer its reasoning core with at most one short directive: what to prioritise, avoid or watch, given the trend.',
  'Answer with exactly one of:',
  'STEERING_DIRECTIVE: <one imperative sentence for the reasoning core>',
  'expires_after_cycles: <N>   (optional: how many cycles it should steer; default 20)',
  'or',
  'NONE   (nothing needs steering; this is usually right)',
  'No other text. You have no tools and you contact no one.',
  '',
  UNTRUSTED_PREAMBLE,
].join('\n');

const RETRY_NOTE = 'Your previous answer had neither a `STEERING_DIRECTIVE:` line nor `NONE`. Answer again with exactly one of them.';

export function steeringPrompt(input: {
  rows: readonly CompressedRow[];
  mutations: readonly WorldDiffRow[];
  current_cycle: number;
  reviewed_seq: number;
}): string {
  const history = input.rows
    .map((r) => `#${r.seq}${r.forwarded ? ' [forwarded by the gate]' : ''} (${r.input_tokens}→${r.summary_tokens} tokens): ${r.summary}`)
    .join('\n');
  const timeline = input.mutations.map((d) => `#${d.seq}.${d.index} ${d.mutation} (delta ${d.delta}${d.critical ? ', critical' : ''})`).join('\n');
  return [
    `Last finished cycle: ${input.current_cycle}. Reviewed before: up to cycle ${input.reviewed_seq}.`,
    `Compressed history (${input.rows.length} cycle${input.rows.length === 1 ? '' : 's'}, oldest first):\n${fence(history, { label: 'compressed_history', maxChars: 24_000 })}`,
    input.mutations.length
      ? `World-state timeline (last ${input.mutations.length} mutations, oldest first):\n${fence(timeline, { label: 'world_diff', maxChars: 8_000 })}`
      : 'World-state timeline: no mutations yet.',
  ].join('\n\n');
}

export type SteeringAnswer = { kind: 'directive'; text: string; expires_after_cycles: number } | { kind: 'none' } | { kind: 'missing' };

const DIRECTIVE = /^[\s>*_`#-]*STEERING_DIRECTIVE[*_`]*\s*:[*_`]*\s*(.*)$/i;
const EXPIRES = /expires_after_cycles[*_`]*\s*[:=]\s*(-?\d+)/i;
const KEY_LINE = /^[\s>*_`#-]*[A-Za-z_]+[*_`]*\s*:/;

/** Read a steering answer. The directive is one cleaned line (control prefixes and fence tags gone), at most 900 characters. */
export function parseSteeringAnswer(raw: string, defaultExpires = DEFAULT_EXPIRES_AFTER_CYCLES): SteeringAnswer {
  const text = raw.replace(/^\s*<think>[\s\S]*?<\/think>\s*/i, '');
  const lines = text.split(/\r?\n/).filter((l) => !/^\s*```/.test(l));
  const at = lines.findIndex((l) => DIRECTIVE.test(l));
  if (at < 0) return /^[\s*_`"'.]*NONE[\s*_`"'.!]*$/i.test(text) ? { kind: 'none' } : { kind: 'missing' };
  const parts = [DIRECTIVE.exec(lines[at]!)![1]!.replace(/[*_`]+$/, '')];
  // A directive the model wrapped onto the next lines continues until a blank or a `key:` line.
  for (const l of lines.slice(at + 1)) {
    if (!l.trim() || KEY_LINE.test(l) || EXPIRES.test(l)) break;
    parts.push(l);
  }
  const directive = cleanLine(parts.join(' ').replace(EXPIRES, ''), MAX_DIRECTIVE_CHARS);
  if (!directive || /^["'`*_]*NONE[.!"'`*_]*$/i.test(directive)) return { kind: 'none' };
  const m = EXPIRES.exec(text);
  const n = m ? Number(m[1]) : defaultExpires;
  const expires = Number.isInteger(n) ? Math.min(MAX_EXPIRES, Math.max(1, n)) : defaultExpires;
  return { kind: 'directive', text: directive, expires_after_cycles: expires };
}

export interface SteeringCall {
  world: string;
  role: ModelRole;
  signal?: AbortSignal | undefined;
}

/** One steering review: the call, one retry for an answer without a directive line, then failure. */
export async function reflectSteering(
  llm: Llm,
  call: SteeringCall,
  prompt: string,
  defaultExpires = DEFAULT_EXPIRES_AFTER_CYCLES,
): Promise<SteeringReflection> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const { text } = await llm.text(
      { world: call.world, purpose: attempt === 1 ? 'steering' : 'steering_retry', role: call.role, signal: call.signal },
      { system: STEERING_SYSTEM, prompt: attempt === 1 ? prompt : `${prompt}\n\n${RETRY_NOTE}`, temperature: STEERING_TEMPERATURE, maxOutputTokens: 400 },
    );
    const answer = parseSteeringAnswer(text, defaultExpires);
    if (answer.kind === 'directive') return { outcome: 'directive', text: answer.text, expires_after_cycles: answer.expires_after_cycles, attempts: attempt };
    if (answer.kind === 'none') return { outcome: 'none', attempts: attempt };
  }
  throw new SubconsciousError('model_malformed', 'The steering model answered twice without a STEERING_DIRECTIVE line or NONE; nothing was stored.', {
    hint: 'The same history is reviewed again at the next tick. If this repeats, use a model that follows the answer format (or set [worlds.steering] role).',
  });
}
