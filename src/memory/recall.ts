/**
 * Full-text recall on both dialects, from a query already reduced to words and phrases
 * (`query.ts`), so no input reaches either engine as syntax.
 *
 * SQLite: FTS5 `MATCH` over `memory_fts` (title weighted 4× the body in bm25), snippets by
 * `snippet()`. Postgres: the `search` tsvector (title weight A, body B) against an OR of
 * `plainto_tsquery`/`phraseto_tsquery` per word and phrase, ranked by `ts_rank_cd` normalised
 * by document length; headlines computed only for the rows returned.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DialectName } from '../store/index.js';
import { MAX_RECALL_LIMIT, type RecallHit } from '../protocol/memory.js';
import { fts5Match, isEmptyQuery, parseQuery, type ParsedQuery } from './query.js';
import { parseMetadata } from './rows.js';
import type { MemoryTables } from './tables.js';

/** How matches are marked in `RecallHit.snippet` (Markdown bold: readable in a terminal and a prompt). */
export const MATCH_OPEN = '**';
export const MATCH_CLOSE = '**';
/**
 * What the engines mark matches with: private-use characters, which the store strips from every
 * title and body (`store.ts`), so a document's own `**` is never taken for a match. They become
 * `highlights` (offsets) and the `**` of `snippet`.
 */
export const SNIPPET_OPEN = '\uE000';
export const SNIPPET_CLOSE = '\uE001';
/** Postgres builds headlines from at most this much of a body (ts_headline reads all it is given). */
const PG_HEADLINE_CHARS = 100_000;

interface HitRow {
  id: number | string;
  namespace: string;
  source_kind: string;
  external_id: string;
  title: string;
  updated_at: number | string;
  metadata: string;
  snippet: string | null;
  score: number | string;
}

export async function recall(
  db: Kysely<MemoryTables>,
  dialect: DialectName,
  opts: { query: string; namespace?: string | undefined; limit: number },
): Promise<RecallHit[]> {
  const parsed = parseQuery(opts.query);
  if (isEmptyQuery(parsed)) return [];
  const limit = Math.max(1, Math.min(MAX_RECALL_LIMIT, Math.floor(opts.limit)));
  const rows = dialect === 'sqlite' ? await recallSqlite(db, parsed, opts.namespace, limit) : await recallPostgres(db, parsed, opts.namespace, limit);
  return rows.map((r) => ({
    id: Number(r.id),
    namespace: r.namespace,
    source_kind: r.source_kind,
    external_id: r.external_id,
    title: r.title,
    ...readSnippet(r.snippet ?? ''),
    score: Number(r.score),
    updated_at: Number(r.updated_at),
    metadata: parseMetadata(r.metadata),
  }));
}

/**
 * An engine's marked passage as the three forms a hit carries: `snippet` with `**` around
 * matches, `snippet_text` without marks, and `highlights`, the matches' `[start, end)` offsets
 * (UTF-16) in `snippet_text`. Whitespace runs become one space first.
 */
export function readSnippet(marked: string): { snippet: string; snippet_text: string; highlights: Array<[number, number]> } {
  const flat = marked.replace(/\s+/g, ' ').trim();
  let text = '';
  const highlights: Array<[number, number]> = [];
  let open: number | null = null;
  for (const ch of flat) {
    if (ch === SNIPPET_OPEN) open ??= text.length;
    else if (ch === SNIPPET_CLOSE) {
      if (open !== null && text.length > open) highlights.push([open, text.length]);
      open = null;
    } else text += ch;
  }
  // An unclosed mark (a fragment cut inside a match) runs to the end.
  if (open !== null && text.length > open) highlights.push([open, text.length]);
  let snippet = '';
  let at = 0;
  for (const [start, end] of highlights) {
    snippet += `${text.slice(at, start)}${MATCH_OPEN}${text.slice(start, end)}${MATCH_CLOSE}`;
    at = end;
  }
  return { snippet: snippet + text.slice(at), snippet_text: text, highlights };
}

/** The FTS5 statement recall runs (the benchmark runs it directly as the floor). */
export function sqliteRecallSql(withNamespace: boolean): string {
  return `SELECT d.id, d.namespace, d.source_kind, d.external_id, d.title, d.updated_at, d.metadata,
      snippet(memory_fts, 1, '${SNIPPET_OPEN}', '${SNIPPET_CLOSE}', '…', 24) AS snippet,
      -bm25(memory_fts, 4.0, 1.0) AS score
    FROM memory_fts JOIN memory_documents d ON d.id = memory_fts.rowid
    WHERE memory_fts MATCH ?${withNamespace ? ' AND d.namespace = ?' : ''}
    ORDER BY bm25(memory_fts, 4.0, 1.0) LIMIT ?`;
}

async function recallSqlite(db: Kysely<MemoryTables>, q: ParsedQuery, namespace: string | undefined, limit: number): Promise<HitRow[]> {
  const match = fts5Match(q)!;
  const params: unknown[] = namespace === undefined ? [match, limit] : [match, namespace, limit];
  const res = await rawQuery<HitRow>(sqliteRecallSql(namespace !== undefined), params).execute(db);
  return res.rows;
}

async function recallPostgres(db: Kysely<MemoryTables>, q: ParsedQuery, namespace: string | undefined, limit: number): Promise<HitRow[]> {
  const parts: RawBuilder<unknown>[] = [
    ...q.phrases.map((p) => sql`phraseto_tsquery('english', ${p.join(' ')})`),
    ...q.terms.map((t) => sql`plainto_tsquery('english', ${t})`),
  ];
  const tsquery = sql.join(parts, sql` || `);
  const nsFilter = namespace === undefined ? sql`` : sql`AND d.namespace = ${namespace}`;
  const res = await sql<HitRow>`
    WITH q AS (SELECT (${tsquery}) AS q),
    ranked AS (
      SELECT d.id, ts_rank_cd(d.search, q.q, 1) AS score
      FROM memory_documents d, q
      WHERE d.search @@ q.q AND d.deleted_at IS NULL ${nsFilter}
      ORDER BY score DESC, d.updated_at DESC
      LIMIT ${limit}
    )
    SELECT d.id, d.namespace, d.source_kind, d.external_id, d.title, d.updated_at, d.metadata, r.score,
      ts_headline('english', left(d.body, ${sql.lit(PG_HEADLINE_CHARS)}), q.q,
        ${`StartSel="${SNIPPET_OPEN}", StopSel="${SNIPPET_CLOSE}", MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … "`}) AS snippet
    FROM ranked r JOIN memory_documents d ON d.id = r.id, q
    ORDER BY r.score DESC, d.updated_at DESC
  `.execute(db);
  return res.rows;
}

/** A raw statement with positional parameters (`?`), as SQLite takes them. */
function rawQuery<R>(text: string, params: unknown[]): RawBuilder<R> {
  const pieces = text.split('?');
  const strings = Object.assign([...pieces], { raw: [...pieces] }) as unknown as TemplateStringsArray;
  return sql<R>(strings, ...params);
}
