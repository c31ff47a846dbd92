/**
 * Seed 1's Activity Log, grouped by tick (issue 10): one group per tick — "14:05 · 4 tasks ·
 * 1 acted · 3 nothing new · 1.2k tokens · 3.1 s" — collapsed when nothing happened in it. Every
 * row shows the model's reason; a failure that repeats is one line with a count. Filter by
 * decision and by task, search the text, and open any row's detail (what the model was told,
 * what it answered, which tools ran, what it cost, who approved what).
 */
import { useEffect, useId, useState } from 'react';
import type { LogGroup, LogGroups, LogLine } from '../../../../src/protocol/index.js';
import type { Decision, Task } from '../../api/types.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { clockTime, count, duration, fullTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { DECISIONS, DECISION_FILTER, DECISION_LOOK, EXPAND_OVER, groupSummary, logText, whyLine } from './decisions.js';
import { LogDetailPanel } from './LogDetail.js';

export interface LogFilters {
  decision: Decision | '';
  taskId: string;
  q: string;
}

export function ActivityLog(props: {
  log: Resource<LogGroups>;
  tasks: Task[] | undefined;
  filters: LogFilters;
  setFilters: (f: LogFilters) => void;
  more?: (() => void) | undefined;
}) {
  const now = useNow(60_000);
  const ids = useId();
  const { filters, setFilters } = props;
  const [search, setSearch] = useState(filters.q);
  // Search as the person types, a moment after they pause.
  useEffect(() => {
    const t = setTimeout(() => {
      if (search !== filters.q) setFilters({ ...filters, q: search });
    }, 250);
    return () => clearTimeout(t);
  }, [search, filters, setFilters]);
  const groups = props.log.data?.groups ?? [];
  const filtered = filters.decision !== '' || filters.taskId !== '' || filters.q !== '';
  return (
    <Section id="activity-log" title="Activity Log">
      <div className="log-filters" role="search" aria-label="Filter the activity log">
        <span className="field">
          <label htmlFor={`${ids}-decision`}>Show</label>
          <select id={`${ids}-decision`} value={filters.decision} onChange={(e) => setFilters({ ...filters, decision: e.target.value as Decision | '' })}>
            <option value="">everything</option>
            {DECISIONS.map((d) => (
              <option key={d} value={d}>
                {DECISION_FILTER[d]}
              </option>
            ))}
          </select>
        </span>
        <span className="field">
          <label htmlFor={`${ids}-task`}>Task</label>
          <select id={`${ids}-task`} value={filters.taskId} onChange={(e) => setFilters({ ...filters, taskId: e.target.value })}>
            <option value="">all tasks</option>
            {(props.tasks ?? []).map((t) => (
              <option key={t.id} value={t.id}>
                {t.title.length > 60 ? `${t.title.slice(0, 59)}…` : t.title}
              </option>
            ))}
          </select>
        </span>
        <span className="field log-search">
          <label htmlFor={`${ids}-q`}>Search</label>
          <input
            id={`${ids}-q`}
            type="search"
            value={search}
            placeholder="words in a task, reason or result"
            maxLength={200}
            onChange={(e) => setSearch(e.target.value)}
          />
        </span>
      </div>
      {!props.log.data && <p className="muted">{props.log.error ? 'The activity log could not be read.' : 'Loading the log…'}</p>}
      {props.log.data && groups.length === 0 && (
        <p className="muted" data-testid="log-empty">
          {filtered
            ? 'Nothing in the log matches.'
            : 'Nothing yet. Each tick writes here what it decided for each task it looked at, and why. A tick where nothing changed writes nothing.'}
        </p>
      )}
      <ol className="log-groups">
        {groups.map((g) => (
          <TickGroup key={`${g.tick_id}:${g.ticks}`} group={g} now={now} />
        ))}
      </ol>
      {props.more && (
        <button type="button" className="log-more" onClick={props.more}>
          Show older ticks
        </button>
      )}
    </Section>
  );
}

function TickGroup(props: { group: LogGroup; now: number }) {
  const g = props.group;
  // Quiet groups start collapsed; the person's opening or closing sticks while the data refreshes.
  const [open, setOpen] = useState(!g.quiet);
  return (
    <li className={`log-group${g.quiet ? ' log-group-quiet' : ''}`} data-testid="log-group" data-quiet={g.quiet} data-ticks={g.ticks}>
      <details open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary className="log-group-summary" data-testid="log-group-summary" title={fullTime(g.tick_at)}>
          {groupSummary(g, props.now)}
        </summary>
        <ol className="log-list">
          {g.lines.map((l) => (
            <LogRow key={l.entry.id} line={l} now={props.now} />
          ))}
        </ol>
      </details>
    </li>
  );
}

function LogRow(props: { line: LogLine; now: number }) {
  const [open, setOpen] = useState(false);
  const [detail, setDetail] = useState(false);
  const l = props.line;
  const r = l.entry;
  const look = DECISION_LOOK[r.decision] ?? { color: 'gray' as const, label: r.decision };
  const text = logText(r);
  const why = whyLine(r);
  const long = text.length > EXPAND_OVER;
  const shown = long && !open ? `${text.slice(0, EXPAND_OVER).trimEnd()}…` : text;
  const textId = `log-${r.id}-text`;
  const detailId = `log-${r.id}-detail`;
  const repeated = l.count > 1;
  return (
    <li
      className={`log-row log-${r.decision}`}
      data-testid="log-row"
      data-log-id={r.id}
      data-task-id={r.task_id}
      data-decision={r.decision}
      data-count={l.count}
    >
      <time className="log-time" dateTime={new Date(r.created_at).toISOString()} title={fullTime(r.created_at)}>
        {clockTime(r.created_at, props.now)}
      </time>
      <span className="log-dot" title={r.decision.replace('_', ' ')}>
        <Dot color={look.color} pulse={look.pulse} />
        <span className="visually-hidden">{r.decision.replace('_', ' ')}: </span>
      </span>
      <div className="log-body">
        <div className="log-task">
          {repeated && l.task_titles.length > 1
            ? `${l.task_titles.length} tasks: ${l.task_titles.slice(0, 3).join(', ')}${l.task_titles.length > 3 ? ', …' : ''}`
            : r.task_title}
          {repeated && (
            <span
              className="badge badge-count"
              data-testid="log-count"
              title={`The same failure ${l.count} times, ${fullTime(l.first_at)} to ${fullTime(l.last_at)}`}
            >
              ×{count(l.count)}
            </span>
          )}
        </div>
        <div id={textId} className={`log-text${r.decision === 'failed' ? ' coral' : ''}`} data-testid="log-text">
          <MessageText text={shown} />
        </div>
        {why && (
          <div className="log-why small" data-testid="log-reason">
            Why: <MessageText text={why} />
          </div>
        )}
        <div className="log-actions">
          {long && (
            <button type="button" className="link small" aria-expanded={open} aria-controls={textId} onClick={() => setOpen(!open)}>
              {open ? 'Show less' : 'Show more'}
            </button>
          )}
          <button
            type="button"
            className="link small"
            aria-expanded={detail}
            aria-controls={detailId}
            onClick={() => setDetail(!detail)}
            data-testid="log-open-detail"
          >
            {detail ? 'Hide details' : 'Details'}
          </button>
        </div>
        {detail && <LogDetailPanel id={detailId} logId={r.id} />}
      </div>
      {!!r.duration_ms && r.decision !== 'in_progress' && <span className="log-duration muted small">{duration(r.duration_ms)}</span>}
    </li>
  );
}
