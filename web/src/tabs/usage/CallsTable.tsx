/** Every ledger row, newest first: latency and outcome per call, paged, optionally one world. */
import { useState } from 'react';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { clockTime, count, duration, fullTime } from '../../ui/format.js';
import { purposeWords } from '../../ui/purpose-words.js';
import { Section } from '../../ui/Section.js';
import { USAGE_EVENTS } from './metrics.js';

const PAGE = 20;

/** A call's outcome in words (the ledger's kind stays in the tooltip and `data-outcome`). */
const OUTCOME_WORDS: Record<string, string> = {
  ok: 'ok',
  pending: 'in progress',
  interrupted: 'interrupted',
  rate_limit: 'rate limited',
  rate_cap: 'too large for the model',
  no_tools: 'model has no tools',
  unreachable: 'unreachable',
  timeout: 'timed out',
  malformed: 'unreadable reply',
  truncated: 'reply cut off',
  cancelled: 'cancelled',
  provider: 'provider error',
};

export function CallsTable(props: { worlds: string[] }) {
  const [page, setPage] = useState(0);
  const [world, setWorld] = useState('');
  const calls = useLiveRpc('usage.calls', { limit: PAGE, offset: page * PAGE, ...(world ? { world } : {}) }, USAGE_EVENTS);
  const now = useNow(60_000);
  const total = calls.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const first = total === 0 ? 0 : page * PAGE + 1;
  const last = Math.min(total, (page + 1) * PAGE);
  return (
    <Section
      id="usage-calls"
      title="Calls"
      count={calls.data?.total}
      actions={
        <label className="choice">
          <span>World</span>{' '}
          <select
            aria-label="World"
            value={world}
            onChange={(e) => {
              setWorld(e.target.value);
              setPage(0);
            }}
          >
            <option value="">all</option>
            {props.worlds.map((w) => (
              <option key={w} value={w}>
                {w}
              </option>
            ))}
          </select>
        </label>
      }
    >
      <div className="table-wrap">
        <table className="data-table calls-table" data-testid="calls-table">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">World</th>
              <th scope="col">Purpose</th>
              <th scope="col">Model</th>
              <th scope="col" className="num">
                Tokens in
              </th>
              <th scope="col" className="num">
                Tokens out
              </th>
              <th scope="col" className="num">
                Latency
              </th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {(calls.data?.rows ?? []).map((r) => (
              <tr key={r.id} data-testid="call-row" data-outcome={r.outcome}>
                <td data-label="When" title={fullTime(r.at)}>
                  {clockTime(r.at, now)}
                </td>
                <td data-label="World">{r.world}</td>
                <td data-label="Purpose" title={r.purpose}>
                  {purposeWords(r.purpose)}
                </td>
                <td data-label="Model" title={`${r.role} model`}>
                  {r.model}
                </td>
                <td data-label="Tokens in" className="num">
                  {count(r.input_tokens)}
                  {r.estimated && <abbr title="estimated: the server gave no usage figures">~</abbr>}
                </td>
                <td data-label="Tokens out" className="num">
                  {count(r.output_tokens)}
                </td>
                <td data-label="Latency" className="num" data-testid="call-latency">
                  {r.state === 'pending' ? '—' : duration(r.latency_ms)}
                </td>
                <td data-label="Outcome">
                  <span
                    className={`outcome ${r.outcome === 'ok' ? 'outcome-ok' : r.state === 'pending' ? 'outcome-pending' : 'outcome-bad'}`}
                    title={r.error ?? r.outcome}
                    data-testid="call-outcome"
                  >
                    {OUTCOME_WORDS[r.outcome] ?? r.outcome.replace(/_/g, ' ')}
                  </span>
                  {r.error && <div className="small muted call-error">{r.error}</div>}
                </td>
              </tr>
            ))}
            {calls.data && calls.data.rows.length === 0 && (
              <tr>
                <td colSpan={8} className="muted">
                  No model calls recorded{world ? ` for ${world}` : ''}.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <nav className="pager" aria-label="Calls pages">
        <button type="button" onClick={() => setPage((p) => Math.max(0, p - 1))} disabled={page === 0}>
          Previous
        </button>
        <span data-testid="calls-range" aria-live="polite">
          {first}–{last} of {count(total)} · page {page + 1} of {pages}
        </span>
        <button type="button" onClick={() => setPage((p) => p + 1)} disabled={page + 1 >= pages}>
          Next
        </button>
      </nav>
    </Section>
  );
}
