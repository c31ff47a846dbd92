/**
 * Which recalled memory document an actionable came from, decided here, not by the model (its
 * reply names no document, and nothing it says is trusted): the document whose title and opening
 * text cover most of the item's content tokens (title and description, the same tokens as
 * dedup.ts), numbers counting like words. At least half of the item's tokens must be in the
 * document, else the item has no source document (a synthesized insight, say). A tie goes to the
 * document recalled first (the newest of its source).
 *
 * A reworded item (the model paraphrased its source: "Settle the ACME bill" from "Invoice 2291
 * overdue") covers too little of any document by its words. Then the document number the model
 * cited (`source_ref`, the prompt's `### Document 2.3`) is taken, but only as a pointer into
 * what this run recalled, and only when that document shares at least one content token with
 * the item: a number that names no recalled document, or a document with nothing in common with
 * the item, links nothing.
 */
import type { SourceDocumentRef } from '../../protocol/conscious.js';
import { titleKey, type TitleKey } from './dedup.js';
import type { ExtractedActionable } from './schema.js';

/** A recalled document as the match reads it (kept small: it travels in the run's checkpoint). */
export interface SourceCandidate {
  namespace: string;
  external_id: string;
  title: string;
  /** The document's title and the opening of its body. */
  text: string;
  /** Its number in the prompt (`2.3`); absent in a checkpoint written before it had one. */
  ref?: string;
}

/** How much of a document's body the match reads. */
export const SOURCE_TEXT_CHARS = 600;
/** The share of the item's tokens a document must hold. */
export const SOURCE_MIN_COVERAGE = 0.5;

export function sourceCandidate(d: { namespace: string; external_id: string; title: string; body: string }, ref?: string): SourceCandidate {
  const c: SourceCandidate = { namespace: d.namespace, external_id: d.external_id, title: d.title, text: `${d.title}\n${d.body.slice(0, SOURCE_TEXT_CHARS)}` };
  if (ref !== undefined) c.ref = ref;
  return c;
}

function coverage(item: TitleKey, doc: TitleKey): number {
  const size = item.words.size + item.numbers.size;
  if (size === 0) return 0;
  let common = 0;
  for (const w of item.words) if (doc.words.has(w)) common++;
  for (const n of item.numbers) if (doc.numbers.has(n)) common++;
  return common / size;
}

/** Each item with its source document (null: none covers enough of it). */
export function matchSourceDocuments(items: readonly ExtractedActionable[], candidates: readonly SourceCandidate[]): ExtractedActionable[] {
  const keys = candidates.map((c) => ({ c, key: titleKey(c.text) }));
  return items.map((item) => {
    const key = titleKey(`${item.title} ${item.description}`);
    let best: { c: SourceCandidate; score: number } | null = null;
    for (const k of keys) {
      const score = coverage(key, k.key);
      if (score >= SOURCE_MIN_COVERAGE && (!best || score > best.score)) best = { c: k.c, score };
    }
    if (!best && item.source_ref) {
      const cited = keys.find((k) => k.c.ref === item.source_ref);
      if (cited && coverage(key, cited.key) > 0) best = { c: cited.c, score: 0 };
    }
    const source_document: SourceDocumentRef | null = best ? { namespace: best.c.namespace, external_id: best.c.external_id, title: best.c.title } : null;
    return { ...item, source_document };
  });
}
