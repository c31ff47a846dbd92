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
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import { stepWords, useFirstSteps, useRunSteps, type RunStep } from './run-steps.js';
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
  const events = useRunSteps();
  const firsts = useFirstSteps(props.log.data?.groups.flatMap((g) => g.lines.map((l) => l.entry)));
  // A run's own events say where it is; before its first one, a run that began while watching is at step 1.
  const steps = { get: (run: string) => events.get(run) ?? firsts.get(run) };
  const ids = useId();
  const { filters, setFilters } = props;
  const failing = useShell().status.data?.instances.find((i) => i.world === 'tasks' && i.consecutive_failures > 0 && i.last_error);
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
            : failing
              ? // A failed tick writes no row here: say so, or "Nothing yet" reads as all is well.
                `Nothing yet: the last ${failing.consecutive_failures === 1 ? 'tick' : `${failing.consecutive_failures} ticks`} failed before deciding anything (${failing.last_error}). Each tick that decides writes here what it decided for each task, and why.`
              : 'Nothing yet. Each tick writes here what it decided for each task it looked at, and why. A tick where nothing changed writes nothing.'}
        </p>
      )}
      <p className="visually-hidden" aria-live="polite" data-testid="log-live">
        {latestWords(groups)}
      </p>
      <ol className="log-groups">
        {groups.map((g) => (
          <TickGroup key={`${g.tick_id}:${g.ticks}`} group={g} now={now} steps={steps} />
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

function TickGroup(props: { group: LogGroup; now: number; steps: { get(run: string): RunStep | undefined } }) {
  const g = props.group;
  // Quiet groups are collapsed until the person opens one; their choice sticks while the data
  // refreshes. A group can turn quiet after its first render (its rows arrive in steps), so the
  // default follows `quiet` until the person chose.
  const [choice, setChoice] = useState<boolean | null>(null);
  const open = choice ?? !g.quiet;
  return (
    <li className={`log-group${g.quiet ? ' log-group-quiet' : ''}`} data-testid="log-group" data-quiet={g.quiet} data-ticks={g.ticks}>
      <details
        open={open}
        onToggle={(e) => {
          // A toggle the default caused (not the person) leaves the choice open.
          const now = (e.currentTarget as HTMLDetailsElement).open;
          if (now !== open) setChoice(now);
        }}
      >
        <summary className="log-group-summary" data-testid="log-group-summary" title={fullTime(g.tick_at)}>
          {groupSummary(g, props.now)}
        </summary>
        <ol className="log-list">
          {g.lines.map((l) => (
            <LogRow key={l.entry.id} line={l} now={props.now} step={l.entry.run_id ? props.steps.get(l.entry.run_id) : undefined} />
          ))}
        </ol>
      </details>
    </li>
  );
}

function LogRow(props: { line: LogLine; now: number; step: RunStep | undefined }) {
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
      {r.decision === 'in_progress' && <RunStage entry={r} step={props.step} />}
    </li>
  );
}

/**
 * A row still open: its stage and how long it has gone on, and while a run carries it out the
 * step it is at (asking the model, a tool on its server, waiting for you) and for how long.
 * Its own clock ticks every second, only while the row is open.
 */
function RunStage(props: { entry: LogLine['entry']; step: RunStep | undefined }) {
  const now = useNow(1000);
  const r = props.entry;
  const s = props.step;
  return (
    <span className="log-duration small log-stage" data-testid="log-stage">
      {stageOf(r)} · {elapsedWords(now - r.updated_at)}
      {s && (r.exec_state === 'running' || r.exec_state === 'executed') && (
        <span className="log-step" data-testid="log-step" data-kind={s.kind}>
          {stepWords(s)} · {elapsedWords(now - s.since)}
        </span>
      )}
    </span>
  );
}

/** The stage of a row still open, in words (issue 23): the model is deciding, or the decision is being carried out. */
function stageOf(r: LogLine['entry']): string {
  return r.exec_state === 'running' || r.exec_state === 'executed' ? 'carrying out' : 'deciding';
}

/** "for 12 seconds", "for 3 minutes": how long a stage has gone on. */
export function elapsedWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `for ${s} second${s === 1 ? '' : 's'}`;
  const m = Math.floor(s / 60);
  return `for ${m} minute${m === 1 ? '' : 's'}`;
}

/** What a screen reader hears when the newest tick changes: each of its rows in a few words. */
function latestWords(groups: readonly LogGroup[]): string {
  const g = groups[0];
  if (!g) return '';
  return g.lines
    .slice(0, 5)
    .map((l) => `${l.entry.task_title}: ${logText(l.entry)}`)
    .join('. ');
}
