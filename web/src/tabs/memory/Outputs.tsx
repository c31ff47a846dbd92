/**
 * The memory world's outputs: what it told the person (its notifications, thread
 * `subconscious:user`; this list is where they are shown), the to-dos it keeps for them and the goals it noticed. A person settles
 * a to-do or a goal here; the world sees that on its next review.
 */
import { call } from '../../api/rpc.js';
import type { GoalStatus, MemoryGoal, MemoryNotification, MemoryTodo, TodoStatus } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';
import { optimistic } from '../subconscious/optimistic.js';

export function Notifications(props: { notifications: Resource<MemoryNotification[]> }) {
  const now = useNow(30_000);
  const list = props.notifications.data;
  return (
    <Section id="memory-notifications" title="Notifications" count={list?.length}>
      {!list && <p className="muted">{props.notifications.error ? 'The notifications could not be read.' : 'Loading…'}</p>}
      {list && list.length === 0 && <p className="muted">None yet. The memory world writes here only when a change in memory needs you.</p>}
      {list && list.length > 0 && (
        <ul className="note-list">
          {list.map((n) => (
            <li key={n.id} className="card note" data-testid="memory-notification" data-priority={n.priority}>
              <div className="note-head">
                <span className={`badge priority priority-${n.priority}`}>{n.priority}</span>
                <time className="muted small" dateTime={new Date(n.created_at).toISOString()} title={fullTime(n.created_at)}>
                  {relativeTime(n.created_at, now)}
                </time>
              </div>
              <p className="note-text">{n.message}</p>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

export function Todos(props: { todos: Resource<MemoryTodo[]> }) {
  const { notify } = useShell();
  const list = props.todos.data;
  const open = (list ?? []).filter((t) => t.status === 'open');
  const settled = (list ?? []).filter((t) => t.status !== 'open');
  const set = (t: MemoryTodo, status: TodoStatus) =>
    optimistic(
      props.todos,
      (d) => d.map((x) => (x.id === t.id ? { ...x, status } : x)),
      () => call('memory.todos_update', { id: t.id, status }),
      `Could not update “${t.title}”`,
      notify,
    );
  return (
    <Section id="memory-todos" title="To-dos" count={list ? open.length : undefined}>
      {!list && <p className="muted">{props.todos.error ? 'The to-dos could not be read.' : 'Loading…'}</p>}
      {list && open.length === 0 && <p className="muted">No open to-do.</p>}
      <ul className="output-list">
        {open.map((t) => (
          <li key={t.id} className="output-row" data-testid="memory-todo" data-status={t.status}>
            <div className="output-text">
              <span>{t.title}</span>
              {t.note && <span className="muted small">{t.note}</span>}
            </div>
            <span className="output-actions">
              <button type="button" onClick={() => void set(t, 'done')} aria-label={`Done: ${t.title}`}>
                Done
              </button>
              <button type="button" className="link" onClick={() => void set(t, 'dropped')} aria-label={`Drop: ${t.title}`}>
                Drop
              </button>
            </span>
          </li>
        ))}
      </ul>
      <SettledItems label="Done or dropped" items={settled} testId="memory-todo" reopen="Open again" onReopen={(t) => void set(t, 'open')} />
    </Section>
  );
}

export function Goals(props: { goals: Resource<MemoryGoal[]> }) {
  const { notify } = useShell();
  const list = props.goals.data;
  const active = (list ?? []).filter((g) => g.status === 'active');
  const settled = (list ?? []).filter((g) => g.status !== 'active');
  const set = (g: MemoryGoal, status: GoalStatus) =>
    optimistic(
      props.goals,
      (d) => d.map((x) => (x.id === g.id ? { ...x, status } : x)),
      () => call('memory.goals_update', { id: g.id, status }),
      `Could not update “${g.title}”`,
      notify,
    );
  return (
    <Section id="memory-goals" title="Goals" count={list ? active.length : undefined}>
      {!list && <p className="muted">{props.goals.error ? 'The goals could not be read.' : 'Loading…'}</p>}
      {list && active.length === 0 && <p className="muted">No goal noticed yet.</p>}
      <ul className="output-list">
        {active.map((g) => (
          <li key={g.id} className="output-row" data-testid="memory-goal" data-status={g.status}>
            <div className="output-text">
              <span>{g.title}</span>
              {g.description && <span className="muted small">{g.description}</span>}
            </div>
            <span className="output-actions">
              <button type="button" onClick={() => void set(g, 'achieved')} aria-label={`Achieved: ${g.title}`}>
                Achieved
              </button>
              <button type="button" className="link" onClick={() => void set(g, 'dropped')} aria-label={`Drop: ${g.title}`}>
                Drop
              </button>
            </span>
          </li>
        ))}
      </ul>
      <SettledItems label="Achieved or dropped" items={settled} testId="memory-goal" reopen="Active again" onReopen={(g) => void set(g, 'active')} />
    </Section>
  );
}

/** The settled to-dos or goals, folded away, each with the button that brings it back. */
function SettledItems<T extends { id: string; title: string; status: string }>(props: {
  label: string;
  items: T[];
  testId: string;
  reopen: string;
  onReopen: (item: T) => void;
}) {
  if (props.items.length === 0) return null;
  return (
    <details className="settled">
      <summary>
        {props.label} ({props.items.length})
      </summary>
      <ul className="output-list">
        {props.items.map((item) => (
          <li key={item.id} className="output-row output-settled" data-testid={props.testId} data-status={item.status}>
            <div className="output-text">
              <span>{item.title}</span>
              <span className="muted small">{item.status}</span>
            </div>
            <button type="button" className="link" onClick={() => props.onReopen(item)} aria-label={`${props.reopen}: ${item.title}`}>
              {props.reopen}
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}
