/**
 * Seed 1's Active Tasks: system tasks are plain text with a green dot and a "default" badge;
 * user tasks get a toggle and a delete button (shown on hover or keyboard focus); the add form
 * takes a title, a recurrence (every tick, once, or `cron:<expr>`) and the write intent, which the
 * daemon decides from the title ("Send the digest to Slack" writes) unless the person chooses.
 * A task with an approval card waiting is not evaluated again until it is answered: it says so.
 */
import { useId, useRef, useState, type FormEvent } from 'react';
import { rpc } from '../../api/rpc.js';
import type { Task } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { Section } from '../../ui/Section.js';
import { Switch } from '../../ui/Switch.js';
import { optimistic } from './optimistic.js';

/** `waiting`: ids of tasks whose escalation waits for the person's answer. */
export function ActiveTasks(props: { tasks: Resource<Task[]>; waiting: ReadonlySet<string> }) {
  const { tasks, waiting } = props;
  const list = (tasks.data ?? []).filter((t) => !t.completed);
  const system = list.filter((t) => t.source === 'system');
  const user = list.filter((t) => t.source === 'user');
  return (
    <Section id="active-tasks" title="Active Tasks" count={tasks.data ? list.length : undefined}>
      {!tasks.data && <p className="muted">{tasks.error ? 'The tasks could not be read.' : 'Loading tasks…'}</p>}
      <ul className="task-list">
        {system.map((t) => (
          <li key={t.id} className="task-row task-system" data-testid="task-row" data-task-id={t.id} data-source="system">
            <Dot color={t.enabled ? 'green' : 'gray'} />
            <span className="task-title">{t.title}</span>
            {waiting.has(t.id) && <WaitingBadge />}
            <span className="badge">default</span>
          </li>
        ))}
        {user.map((t) => (
          <UserTask key={t.id} task={t} tasks={tasks} waiting={waiting.has(t.id)} />
        ))}
      </ul>
      <AddTask tasks={tasks} />
    </Section>
  );
}

function recurrenceText(r: string): string | null {
  if (r === 'once') return 'once';
  if (r.startsWith('cron:')) return r.slice(5).trim();
  return null;
}

function WaitingBadge() {
  return (
    <span className="badge badge-waiting" data-testid="task-waiting" title="Paused: this task runs again once you answer its card under Approval Needed">
      waiting for you
    </span>
  );
}

function UserTask(props: { task: Task; tasks: Resource<Task[]>; waiting: boolean }) {
  const { notify } = useShell();
  const t = props.task;
  const pending = t.id.startsWith('pending-');
  const rec = recurrenceText(t.recurrence);
  const toggle = (enabled: boolean) =>
    optimistic(
      props.tasks,
      (d) => d.map((x) => (x.id === t.id ? { ...x, enabled } : x)),
      () => rpc('subconscious.tasks_update', { id: t.id, enabled }),
      `Could not ${enabled ? 'enable' : 'pause'} “${t.title}”`,
      notify,
    );
  const remove = () =>
    optimistic(
      props.tasks,
      (d) => d.filter((x) => x.id !== t.id),
      () => rpc('subconscious.tasks_remove', { id: t.id }),
      `Could not delete “${t.title}”`,
      notify,
    );
  return (
    <li className={`task-row task-user${t.enabled ? '' : ' task-paused'}`} data-testid="task-row" data-task-id={t.id} data-source="user" data-enabled={t.enabled}>
      <Dot color={t.enabled ? 'green' : 'gray'} />
      <span className="task-title">{t.title}</span>
      {props.waiting && <WaitingBadge />}
      {rec && (
        <span className="badge badge-quiet" title={`Recurrence: ${t.recurrence}`}>
          {rec}
        </span>
      )}
      {t.needs_tools && (
        <span className="badge badge-quiet" title="Write intent: the agent may act with tools for this task without asking">
          writes
        </span>
      )}
      <span className="task-controls">
        <Switch checked={t.enabled} label={`Enable task: ${t.title}`} onChange={toggle} disabled={pending} />
        <button type="button" className="icon-button task-delete" aria-label={`Delete task: ${t.title}`} title="Delete" onClick={remove} disabled={pending}>
          <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
            <path d="M6 2h4l1 1h3v2H2V3h3l1-1zm-2 4h8l-.6 8H4.6L4 6z" fill="currentColor" />
          </svg>
        </button>
      </span>
    </li>
  );
}

type RecurrenceChoice = 'default' | 'once' | 'cron';
/** `auto` leaves `needs_tools` out so the daemon decides from the title (seed 1's write intent). */
type IntentChoice = 'auto' | 'read' | 'write';

function AddTask(props: { tasks: Resource<Task[]> }) {
  const { notify } = useShell();
  const ids = useId();
  const [title, setTitle] = useState('');
  const [choice, setChoice] = useState<RecurrenceChoice>('default');
  const [cron, setCron] = useState('');
  const [intent, setIntent] = useState<IntentChoice>('auto');
  const [error, setError] = useState<string | null>(null);
  const temp = useRef(0);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const text = title.trim();
    if (!text) return setError('Write what the task should check or do.');
    if (choice === 'cron' && !cron.trim()) return setError('Give a cron expression, e.g. 0 9 * * 1-5 (weekdays at 9:00).');
    setError(null);
    const recurrence = choice === 'once' ? 'once' : choice === 'cron' ? `cron:${cron.trim()}` : undefined;
    const needsTools = intent === 'auto' ? undefined : intent === 'write';
    const placeholder: Task = {
      id: `pending-${++temp.current}`,
      title: text,
      source: 'user',
      origin: 'user',
      recurrence: recurrence ?? 'pending',
      enabled: true,
      needs_tools: needsTools ?? false,
      last_run_at: null,
      next_run_at: null,
      completed: false,
      updated_at: Date.now(),
      created_at: Date.now(),
    };
    setTitle('');
    const ok = await optimistic(
      props.tasks,
      (d) => [...d, placeholder],
      () =>
        rpc('subconscious.tasks_add', {
          title: text,
          ...(recurrence ? { recurrence } : {}),
          ...(needsTools !== undefined ? { needs_tools: needsTools } : {}),
        }),
      `Could not add “${text}”`,
      notify,
    );
    if (!ok) setTitle(text); // give the text back so nothing typed is lost
  };

  return (
    <form className="add-task" onSubmit={submit} aria-label="Add a task" noValidate>
      <div className="add-task-main">
        <label htmlFor={`${ids}-title`} className="visually-hidden">
          New task
        </label>
        <input
          id={`${ids}-title`}
          type="text"
          placeholder="Add a task, e.g. Check urgent emails"
          value={title}
          maxLength={500}
          onChange={(e) => setTitle(e.target.value)}
          aria-invalid={error !== null}
          aria-describedby={error ? `${ids}-error` : undefined}
        />
        <button type="submit" className="primary">
          Add
        </button>
      </div>
      <div className="add-task-options">
        <span className="field">
          <label htmlFor={`${ids}-runs`}>Runs</label>
          <select id={`${ids}-runs`} value={choice} onChange={(e) => setChoice(e.target.value as RecurrenceChoice)}>
            <option value="default">every tick</option>
            <option value="once">once</option>
            <option value="cron">on a cron schedule</option>
          </select>
        </span>
        {choice === 'cron' && (
          <span className="field">
            <label htmlFor={`${ids}-cron`}>Cron</label>
            <input
              id={`${ids}-cron`}
              type="text"
              className="cron-input"
              placeholder="0 9 * * 1-5"
              value={cron}
              onChange={(e) => setCron(e.target.value)}
              spellCheck={false}
              aria-describedby={`${ids}-cron-help`}
            />
            <span id={`${ids}-cron-help`} className="visually-hidden">
              Five fields: minute, hour, day of month, month, day of week.
            </span>
          </span>
        )}
        <span className="field">
          <label htmlFor={`${ids}-writes`}>Writes</label>
          <select id={`${ids}-writes`} value={intent} onChange={(e) => setIntent(e.target.value as IntentChoice)}>
            <option value="auto">decided from the title</option>
            <option value="read">never (read-only)</option>
            <option value="write">yes, I ask for them</option>
          </select>
        </span>
      </div>
      {error && (
        <p id={`${ids}-error`} className="coral small" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
