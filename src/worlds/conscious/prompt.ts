/**
 * The conscious loop's prompt: the seed's CONSCIOUS_LOOP.md (a `CONSCIOUS_LOOP.md` in the
 * workspace replaces it), and the recalled memory as the user message, every document and
 * source name fenced as untrusted data.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UNTRUSTED_PREAMBLE, cleanLine, fence } from '../../llm/fence.js';
import type { MemoryDocument, MemoryNamespace } from '../../protocol/memory.js';

/** The seed's prompt (seed 3, "CONSCIOUS_LOOP.md Prompt"), for this product rather than OpenHuman. */
export const BUILT_IN_PROMPT = `# Conscious Loop — Actionable Extraction
You are the conscious awareness layer of the user's assistant. You periodically review all
memory contexts from the user's connected integrations and extract actionable
items that deserve attention.
## Your Task
Analyze the recalled memory contexts provided below. For each context, identify
items that are:
1. **Time-sensitive** — deadlines, expiring offers, meetings, scheduled events
2. **Requires response** — unanswered emails, pending messages, open requests
3. **Opportunity** — insights, patterns, or suggestions the user may benefit from
4. **Risk/Alert** — security issues, anomalies, overdue tasks, budget warnings
## Output Format
Return a JSON array of actionable items. Each item must have this exact structure:
{
"title": "Short descriptive title (under 80 chars)",
"description": "1-2 sentence explanation with context",
"source": "email|calendar|telegram|ai_insight|system|trading|security",
"priority": "critical|important|normal",
"actionable": true,
"requires_confirmation": false,
"has_complex_action": false,
"source_label": "Human-readable source name (e.g. Gmail, Telegram, Notion)",
"source_ref": "The number of the document it came from, as in its heading (e.g. 2.3), or null for a synthesized observation"
}
## Rules
- Return ONLY the JSON array, no markdown fences, no commentary
- Deduplicate: if the same item appears in multiple sources, merge into one
- Limit to 20 items maximum per run — prioritize the most important
- Use "ai_insight" as source when the item is a synthesized observation
- Use "system" for maintenance, sync status, or technical alerts
- Map integration sources: gmail -> "email", telegram -> "telegram", notion -> "system", google_calendar -> "calendar"
- Set priority "critical" only for truly urgent items (expiring today, security breach)
- Set priority "important" for items needing attention within 24-48 hours
- Set "has_complex_action" to true when the item requires multi-step user action
- Set "requires_confirmation" to true when the item involves financial transactions or irreversible actions
- If no actionable items are found, return an empty array: []`;

const MAX_PROMPT_FILE_BYTES = 64 * 1024;

export interface LoadedPrompt {
  text: string;
  source: 'workspace' | 'built-in';
}

/** The workspace's prompt file when it exists and is not empty (capped), else the built-in one. */
export async function loadPrompt(workspace: string, file: string): Promise<LoadedPrompt> {
  try {
    const text = (await readFile(path.join(workspace, file), 'utf8')).slice(0, MAX_PROMPT_FILE_BYTES).trim();
    if (text) return { text, source: 'workspace' };
  } catch {
    // absent or unreadable: the built-in prompt
  }
  return { text: BUILT_IN_PROMPT, source: 'built-in' };
}

export function systemPrompt(prompt: LoadedPrompt): string {
  return `${prompt.text}\n\n${UNTRUSTED_PREAMBLE}`;
}

export interface RecalledNamespace {
  namespace: MemoryNamespace;
  documents: MemoryDocument[];
}

const PROMPT_HEAD = /^Now: \S+\. Recalled memory from \d+ connected sources?:/;

/** Whether a user message is the extraction's (`simulate` knows the call by it: the system prompt may be the workspace's own). */
export function isExtractionPrompt(prompt: string): boolean {
  return PROMPT_HEAD.test(prompt);
}

/** How much of memory the user message may hold. */
export interface RecallBudget {
  /** The whole user message, in tokens (4 characters each). */
  budgetTokens: number;
  /** A document's cap when there is room. */
  maxChars: number;
  /** What every recalled document gets before any gets more (its head: title, sender, first lines). */
  minChars: number;
}

// Fence tags, the JSON escaping of line breaks and quotes, and the "### Document n" line: a
// document costs this much beyond its text; the rest of the budget is kept as headroom.
const DOC_OVERHEAD_CHARS = 80;
const SECTION_OVERHEAD_CHARS = 300;
const ESCAPING_HEADROOM = 0.85;

/**
 * The user message: per connected source, its name and its recalled documents (newest first),
 * each one fenced. The budget is shared between the sources (what one leaves unused goes to the
 * next); within a source every document first gets `minChars` — so an older item still pending
 * stays in view on a busy mailbox — then the newest get more, up to `maxChars`. Documents that do
 * not fit even their head are left out, and the message says how many.
 */
export function memoryPrompt(recalled: RecalledNamespace[], now: number, budget: RecallBudget): string {
  const head = `Now: ${new Date(now).toISOString()}. Recalled memory from ${recalled.length} connected source${recalled.length === 1 ? '' : 's'}:`;
  let room = Math.floor(budget.budgetTokens * 4 * ESCAPING_HEADROOM) - head.length;
  const sections = recalled.map(({ namespace: ns, documents }, n) => {
    // The label is any host's text (memory.store_document {namespace_label}): data, so fenced.
    const title = [
      `## Source ${n + 1} (integration: ${cleanLine(ns.namespace, 64)}, kind: ${cleanLine(ns.kind, 32)}, ${documents.length} recalled)`,
      `Name:\n${fence(cleanLine(ns.label, 100), { label: `source name ${ns.namespace}`, maxChars: 100 })}`,
    ].join('\n');
    const texts = documents.map(documentText);
    const share = Math.floor(room / (recalled.length - n)) - title.length - SECTION_OVERHEAD_CHARS;
    const caps = allot(
      texts.map((t) => t.length),
      share,
      budget,
    );
    const docs: string[] = [];
    texts.forEach((text, i) => {
      if (caps[i]! > 0) docs.push(`### Document ${documentRef(n, i)}\n${fence(text, { label: `memory ${ns.namespace}`, maxChars: caps[i]! })}`);
    });
    const left = texts.length - docs.length;
    if (left > 0) docs.push(`(${left} older document${left === 1 ? '' : 's'} of this source left out: over the context budget)`);
    const section = [title, ...docs].join('\n\n');
    room -= section.length;
    return section;
  });
  return [head, ...sections].join('\n\n');
}

/**
 * A recalled document's number in the prompt, `<source>.<document>` (1-based, in recall order):
 * the model cites it as an item's `source_ref`, and source-match.ts reads it back.
 */
export function documentRef(sourceIndex: number, documentIndex: number): string {
  return `${sourceIndex + 1}.${documentIndex + 1}`;
}

function documentText(d: MemoryDocument): string {
  const meta = d.metadata;
  return [
    `Title: ${d.title}`,
    typeof meta.from === 'string' ? `From: ${meta.from}` : null,
    typeof meta.date === 'string' ? `Date: ${meta.date}` : null,
    `Updated: ${new Date(d.updated_at).toISOString()}`,
    `Kind: ${d.source_kind}`,
    '',
    d.body,
  ]
    .filter((l) => l !== null)
    .join('\n');
}

/** Each document's cap in characters, newest first (0: left out): breadth first, then depth. */
export function allot(lengths: readonly number[], shareChars: number, budget: Pick<RecallBudget, 'maxChars' | 'minChars'>): number[] {
  const caps = lengths.map(() => 0);
  let left = Math.max(0, shareChars);
  for (let i = 0; i < lengths.length; i++) {
    const want = Math.min(lengths[i]!, budget.minChars, budget.maxChars);
    if (want + DOC_OVERHEAD_CHARS > left) break;
    caps[i] = want;
    left -= want + DOC_OVERHEAD_CHARS;
  }
  for (let i = 0; i < lengths.length && left > 0; i++) {
    if (caps[i] === 0) break;
    const more = Math.min(Math.min(lengths[i]!, budget.maxChars) - caps[i]!, left);
    caps[i] = caps[i]! + more;
    left -= more;
  }
  return caps;
}
