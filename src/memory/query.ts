/**
 * Recall queries are untrusted text (a person's search box, a model's tool call): they are
 * reduced to words and "quoted phrases" before they reach a full-text engine, so no input is
 * ever a syntax error — FTS5's query language (AND/OR/NOT/NEAR, `col:`, `*`, `^`, parentheses)
 * and Postgres' tsquery operators never see a raw character of it.
 *
 * A document matches when it holds any of the words or phrases; the engines rank documents
 * holding more of them (and holding them in the title) higher.
 */

export interface ParsedQuery {
  /** Single words, lower-cased, de-duplicated. */
  terms: string[];
  /** Multi-word phrases from balanced double quotes. */
  phrases: string[][];
}

export const MAX_QUERY_TERMS = 32;
const MAX_TERM_CHARS = 64;
const MAX_PHRASE_WORDS = 8;
// Letters, digits and combining marks: what FTS5's unicode61 and Postgres' parsers treat as a word.
const WORD = /[\p{L}\p{N}\p{M}]+/gu;

function words(text: string): string[] {
  return (text.match(WORD) ?? []).map((w) => w.toLowerCase().slice(0, MAX_TERM_CHARS));
}

export function parseQuery(text: string): ParsedQuery {
  const phrases: string[][] = [];
  const seenPhrases = new Set<string>();
  // Balanced "…" pairs become phrases; whatever is left is words.
  const rest = text.replace(/"([^"]*)"/g, (_m, inner: string) => {
    const ws = words(inner).slice(0, MAX_PHRASE_WORDS);
    if (ws.length > 1) {
      const key = ws.join(' ');
      if (!seenPhrases.has(key)) {
        seenPhrases.add(key);
        phrases.push(ws);
      }
      return ' ';
    }
    return ` ${ws.join(' ')} `;
  });
  const terms = [...new Set(words(rest))];
  const budget = Math.max(0, MAX_QUERY_TERMS - phrases.length);
  return { terms: terms.slice(0, budget), phrases: phrases.slice(0, MAX_QUERY_TERMS) };
}

export function isEmptyQuery(q: ParsedQuery): boolean {
  return q.terms.length === 0 && q.phrases.length === 0;
}

/**
 * The FTS5 MATCH expression: every word and phrase as a double-quoted string (a literal to
 * FTS5, tokenized like the indexed text), joined with OR. Null when nothing is left to search.
 */
export function fts5Match(q: ParsedQuery): string | null {
  if (isEmptyQuery(q)) return null;
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  return [...q.phrases.map((p) => quote(p.join(' '))), ...q.terms.map(quote)].join(' OR ');
}
