/**
 * Recall from the page: a search box (all sources or one), ranked results with their snippets,
 * matches marked. Any text is a valid query (the daemon reduces it to words and phrases).
 */
import { useId, useRef, useState, type FormEvent } from 'react';
import { call, explain } from '../../api/rpc.js';
import type { MemoryNamespace, RecallHit } from '../../../../src/protocol/index.js';
import { useNow } from '../../shell/hooks.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';
import { Snippet } from './Snippet.js';

const LIMIT = 20;

interface Answer {
  query: string;
  namespace: string;
  hits: RecallHit[];
}

export function Search(props: { namespaces: MemoryNamespace[] | undefined }) {
  const ids = useId();
  const now = useNow(60_000);
  const [query, setQuery] = useState('');
  const [namespace, setNamespace] = useState('');
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const asked = useRef(0);
  const labels = new Map((props.namespaces ?? []).map((n) => [n.namespace, n.label]));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const q = query.trim();
    if (!q) return setError('Type a few words to look for.');
    const mine = ++asked.current;
    setBusy(true);
    setError(null);
    try {
      const { hits } = await call('memory.recall', { query: q, limit: LIMIT, ...(namespace ? { namespace } : {}) });
      if (mine === asked.current) setAnswer({ query: q, namespace, hits });
    } catch (err) {
      if (mine === asked.current) setError(`The search failed: ${explain(err)}`);
    } finally {
      if (mine === asked.current) setBusy(false);
    }
  };

  const where = (ns: string) => (ns ? ` in ${labels.get(ns) ?? ns}` : '');
  return (
    <Section id="memory-search" title="Search memory">
      <form className="memory-search" role="search" onSubmit={submit} aria-label="Search memory">
        <label htmlFor={`${ids}-q`} className="visually-hidden">
          Search memory
        </label>
        <input
          id={`${ids}-q`}
          type="search"
          value={query}
          maxLength={1000}
          placeholder="e.g. invoice overdue"
          onChange={(e) => setQuery(e.target.value)}
          aria-describedby={error ? `${ids}-error` : undefined}
        />
        <label htmlFor={`${ids}-ns`} className="visually-hidden">
          Source
        </label>
        <select id={`${ids}-ns`} value={namespace} onChange={(e) => setNamespace(e.target.value)}>
          <option value="">All sources</option>
          {(props.namespaces ?? []).map((n) => (
            <option key={n.namespace} value={n.namespace}>
              {n.label}
            </option>
          ))}
        </select>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      {error && (
        <p id={`${ids}-error`} className="coral small" role="alert">
          {error}
        </p>
      )}
      <p className="visually-hidden" role="status" aria-live="polite">
        {answer ? `${answer.hits.length} result${answer.hits.length === 1 ? '' : 's'} for ${answer.query}${where(answer.namespace)}` : ''}
      </p>
      {answer && answer.hits.length === 0 && (
        <p className="muted" data-testid="search-empty">
          Nothing in memory matches “{answer.query}”{where(answer.namespace)}.
        </p>
      )}
      {answer && answer.hits.length > 0 && (
        <ol className="hit-list" data-testid="search-results" aria-label={`Results for ${answer.query}`}>
          {answer.hits.map((h) => (
            <li key={h.id} className="hit" data-testid="search-hit" data-external-id={h.external_id}>
              <div className="hit-head">
                <span className="hit-title">{h.title}</span>
                <span className="badge badge-quiet badge-label">{labels.get(h.namespace) ?? h.namespace}</span>
              </div>
              {h.snippet_text && (
                <p className="hit-snippet" data-testid="hit-snippet">
                  <Snippet text={h.snippet_text} highlights={h.highlights} />
                </p>
              )}
              <p className="muted small hit-meta">
                <code>{h.external_id}</code> · updated <time title={fullTime(h.updated_at)}>{relativeTime(h.updated_at, now)}</time>
              </p>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
