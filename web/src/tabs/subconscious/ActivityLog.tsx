/**
 * Seed 1's Activity Log: timestamp, the decision's dot and text (pulsing blue while
 * `in_progress`), results over 120 characters collapsed behind "Show more".
 */
import { useState } from 'react';
import type { LogEntry } from '../../api/types.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { clockTime, duration, fullTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { DECISION_LOOK, EXPAND_OVER, logText } from './decisions.js';

export function ActivityLog(props: { log: Resource<LogEntry[]>; more?: (() => void) | undefined }) {
  const now = useNow(60_000);
  const rows = [...(props.log.data ?? [])].sort((a, b) => b.created_at - a.created_at || b.tick_at - a.tick_at || b.id.localeCompare(a.id));
  return (
    <Section id="activity-log" title="Activity Log">
      {!props.log.data && <p className="muted">{props.log.error ? 'The activity log could not be read.' : 'Loading the log…'}</p>}
      {props.log.data && rows.length === 0 && <p className="muted">Nothing yet. Ticks write here as they evaluate tasks.</p>}
      <ol className="log-list">
        {rows.map((r) => (
          <LogRow key={r.id} entry={r} now={now} />
        ))}
      </ol>
      {props.more && (
        <button type="button" className="log-more" onClick={props.more}>
          Show older entries
        </button>
      )}
    </Section>
  );
}

function LogRow(props: { entry: LogEntry; now: number }) {
  const [open, setOpen] = useState(false);
  const r = props.entry;
  const look = DECISION_LOOK[r.decision] ?? { color: 'gray' as const, label: r.decision };
  const text = logText(r);
  const long = text.length > EXPAND_OVER;
  const shown = long && !open ? `${text.slice(0, EXPAND_OVER).trimEnd()}…` : text;
  const textId = `log-${r.id}-text`;
  return (
    <li className={`log-row log-${r.decision}`} data-testid="log-row" data-log-id={r.id} data-task-id={r.task_id} data-decision={r.decision}>
      <time className="log-time" dateTime={new Date(r.created_at).toISOString()} title={fullTime(r.created_at)}>
        {clockTime(r.created_at, props.now)}
      </time>
      <span className="log-dot" title={r.decision.replace('_', ' ')}>
        <Dot color={look.color} pulse={look.pulse} />
        <span className="visually-hidden">{r.decision.replace('_', ' ')}: </span>
      </span>
      <div className="log-body">
        {r.task_title && <div className="log-task">{r.task_title}</div>}
        <div id={textId} className={`log-text${r.decision === 'failed' ? ' coral' : ''}`} data-testid="log-text">
          <MessageText text={shown} />
        </div>
        {long && (
          <button type="button" className="link small" aria-expanded={open} aria-controls={textId} onClick={() => setOpen(!open)}>
            {open ? 'Show less' : 'Show more'}
          </button>
        )}
      </div>
      {r.duration_ms !== null && r.decision !== 'in_progress' && <span className="log-duration muted small">{duration(r.duration_ms)}</span>}
    </li>
  );
}
