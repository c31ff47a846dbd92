/**
 * Deterministic duplicate detection for actionables (seed 3: "if the same item appears in
 * multiple sources, merge into one"), with no model call. Two titles are the same item when
 *
 *   their content tokens (lower-cased words, punctuation and stop words dropped, a plural `s`
 *   dropped) have a Dice coefficient 2·|A∩B| / (|A|+|B|) of at least `SAME_ITEM_SIMILARITY`
 *   (0.7), and
 *   they carry the same numbers (invoice 2291 is never invoice 2292), and
 *   both have at least one content token.
 *
 * The source does not count: the same request seen in mail and in a chat is one item. Within a
 * reply, a duplicate is folded into the first item like it (the most urgent priority and every
 * source label kept); across runs, a reworded item takes the id of the stored item it matches,
 * so its state (done, dismissed) and its memory document stay the same.
 */
import { ACTIONABLE_PRIORITIES } from '../../protocol/conscious.js';
import type { ExtractedActionable } from './schema.js';

export const SAME_ITEM_SIMILARITY = 0.7;
const LABEL_MAX = 60;

const STOP_WORDS = new Set(
  'a an and are as at be by for from has have in into is it its of on or re the their this to was were will with your you about after before please'.split(' '),
);

export interface TitleKey {
  words: Set<string>;
  numbers: Set<string>;
}

/** The content tokens of a title (see above). */
export function titleKey(title: string): TitleKey {
  const words = new Set<string>();
  const numbers = new Set<string>();
  for (const raw of title
    .toLowerCase()
    .normalize('NFKD')
    .split(/[^\p{L}\p{N}]+/u)) {
    if (!raw || STOP_WORDS.has(raw)) continue;
    if (/^\p{N}+$/u.test(raw)) {
      numbers.add(raw.replace(/^0+(?=\d)/, ''));
      continue;
    }
    words.add(raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
  }
  return { words, numbers };
}

/** Dice similarity of the two titles' tokens (words and numbers), 0..1. */
export function titleSimilarity(a: TitleKey, b: TitleKey): number {
  const size = a.words.size + a.numbers.size + b.words.size + b.numbers.size;
  if (size === 0) return 0;
  let common = 0;
  for (const w of a.words) if (b.words.has(w)) common++;
  for (const n of a.numbers) if (b.numbers.has(n)) common++;
  return (2 * common) / size;
}

/** Whether two titles name the same item. */
export function sameItem(a: TitleKey, b: TitleKey): boolean {
  if (a.words.size === 0 || b.words.size === 0) return false;
  if (a.numbers.size !== b.numbers.size || [...a.numbers].some((n) => !b.numbers.has(n))) return false;
  return titleSimilarity(a, b) >= SAME_ITEM_SIMILARITY;
}

/** One reply's items with duplicates folded into the first like them; how many were folded. */
export function mergeDuplicates(items: readonly ExtractedActionable[]): { items: ExtractedActionable[]; merged: number } {
  const out: { item: ExtractedActionable; key: TitleKey }[] = [];
  let merged = 0;
  for (const item of items) {
    const key = titleKey(item.title);
    const twin = out.find((o) => o.item.id === item.id || sameItem(o.key, key));
    if (!twin) {
      out.push({ item: { ...item }, key });
      continue;
    }
    merged++;
    twin.item = fold(twin.item, item);
  }
  return { items: out.map((o) => o.item), merged };
}

/** A reworded item takes the id of the stored item it matches (an exact id is kept as it is). */
export function matchStored(items: readonly ExtractedActionable[], stored: readonly { id: string; title: string }[]): ExtractedActionable[] {
  const ids = new Set(stored.map((s) => s.id));
  const keys = stored.map((s) => ({ id: s.id, key: titleKey(s.title) }));
  const taken = new Set<string>();
  return items.map((item) => {
    if (ids.has(item.id)) {
      taken.add(item.id);
      return item;
    }
    const key = titleKey(item.title);
    const match = keys.find((k) => !taken.has(k.id) && sameItem(k.key, key));
    if (!match) return item;
    taken.add(match.id);
    return { ...item, id: match.id };
  });
}

function fold(into: ExtractedActionable, other: ExtractedActionable): ExtractedActionable {
  const urgent = ACTIONABLE_PRIORITIES.indexOf(other.priority) < ACTIONABLE_PRIORITIES.indexOf(into.priority);
  const labels = [...new Set([...into.source_label.split(' + '), other.source_label].filter(Boolean))].join(' + ');
  return {
    ...into,
    priority: urgent ? other.priority : into.priority,
    actionable: into.actionable || other.actionable,
    requires_confirmation: into.requires_confirmation || other.requires_confirmation,
    has_complex_action: into.has_complex_action || other.has_complex_action,
    source_label: labels.length <= LABEL_MAX ? labels : into.source_label,
  };
}
