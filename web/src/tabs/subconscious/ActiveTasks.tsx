/**
 * Seed 1's Active Tasks: system tasks are plain text with a green dot and a "default" badge
 * (one switched off gets its switch back, so it can be switched on again; never a delete);
 * user tasks get a toggle and a delete button (shown on hover or keyboard focus); the add form
 * takes a title, a recurrence (every tick, once, or `cron:<expr>`) and the write intent, which the
 * daemon decides from the title ("Send the digest to Slack" writes) unless the person chooses.
 * A task with an approval card waiting is not evaluated again until it is answered: it says so.
 * The form's errors, its own and the daemon's refusals, show under it until the next add or
 * edit succeeds.
 */
import { useId, useRef, useState, type FormEvent } from 'react';
import { RpcError, call } from '../../api/rpc.js';
import type { Task } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { Switch } from '../../ui/Switch.js';
import { optimistic } from './optimistic.js';

/** `waiting`: ids of tasks whose escalation waits for the person's answer. */
export function ActiveTasks(props: { tasks: Resource<Task[]>; waiting: ReadonlySet<string> }) {
  const { tasks, waiting } = props;
  const list = (tasks.data ?? []).filter((t) => !t.completed);
  const system = list.filter((t) => t.source === 'system');
  const user = list.filter((t) => t.source === 'user');
  const [formError, setFormError] = useState<FormError | null>(null);
  const edited = () => setFormError(null);
  return (
    <Section id="active-tasks" title="Active Tasks" count={tasks.data ? list.length : undefined}>
      {!tasks.data && <p className="muted">{tasks.error ? 'The tasks could not be read.' : 'Loading tasks…'}</p>}
      <ul className="task-list">
        {system.map((t) => (
          <SystemTask key={t.id} task={t} tasks={tasks} waiting={waiting.has(t.id)} onEdited={edited} />
        ))}
        {user.map((t) => (
          <UserTask key={t.id} task={t} tasks={tasks} waiting={waiting.has(t.id)} onEdited={edited} />
        ))}
      </ul>
      <AddTask tasks={tasks} error={formError} setError={setFormError} />
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

interface TaskProps {
  task: Task;
  tasks: Resource<Task[]>;
  waiting: boolean;
  /** Called after the daemon took an edit (a toggle or a delete). */
  onEdited: () => void;
}

async function setTaskEnabled(props: TaskProps, enabled: boolean, notify: Parameters<typeof optimistic>[4]): Promise<void> {
  const t = props.task;
  const ok = await optimistic(
    props.tasks,
    (d) => d.map((x) => (x.id === t.id ? { ...x, enabled } : x)),
    () => call('subconscious.tasks_update', { id: t.id, enabled }),
    `Could not ${enabled ? 'enable' : 'pause'} “${t.title}”`,
    notify,
  );
  if (ok) props.onEdited();
}

/** On, a system task has no controls (seed 1); off, it shows the switch that turns it on again. */
function SystemTask(props: TaskProps) {
  const { notify } = useShell();
  const t = props.task;
  return (
    <li
      className={`task-row task-system${t.enabled ? '' : ' task-paused'}`}
      data-testid="task-row"
      data-task-id={t.id}
      data-source="system"
      data-enabled={t.enabled}
    >
      <Dot color={t.enabled ? 'green' : 'gray'} />
      <span className="task-title">{t.title}</span>
      {props.waiting && <WaitingBadge />}
      <span className="badge">default</span>
      {!t.enabled && (
        <span className="task-controls">
          <Switch checked={false} label={`Enable task: ${t.title}`} onChange={(on) => void setTaskEnabled(props, on, notify)} />
        </span>
      )}
    </li>
  );
}

function UserTask(props: TaskProps) {
  const { notify } = useShell();
  const t = props.task;
  const pending = t.id.startsWith('pending-');
  const rec = recurrenceText(t.recurrence);
  const toggle = (enabled: boolean) => setTaskEnabled(props, enabled, notify);
  const remove = async () => {
    const ok = await optimistic(
      props.tasks,
      (d) => d.filter((x) => x.id !== t.id),
      () => call('subconscious.tasks_remove', { id: t.id }),
      `Could not delete “${t.title}”`,
      notify,
    );
    if (ok) props.onEdited();
  };
  return (
    <li
      className={`task-row task-user${t.enabled ? '' : ' task-paused'}`}
      data-testid="task-row"
      data-task-id={t.id}
      data-source="user"
      data-enabled={t.enabled}
    >
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
/** What the add form says went wrong, and which of its inputs it is about. */
interface FormError {
  text: string;
  input: 'title' | 'cron';
}

function AddTask(props: { tasks: Resource<Task[]>; error: FormError | null; setError: (error: FormError | null) => void }) {
  const { error, setError } = props;
  const ids = useId();
  const [title, setTitle] = useState('');
  const [choice, setChoice] = useState<RecurrenceChoice>('default');
  const [cron, setCron] = useState('');
  const [intent, setIntent] = useState<IntentChoice>('auto');
  const temp = useRef(0);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const text = title.trim();
    if (!text) return setError({ text: 'Write what the task should check or do.', input: 'title' });
    if (choice === 'cron' && !cron.trim()) return setError({ text: 'Give a cron expression, e.g. `0 9 * * 1-5` (weekdays at 9:00).', input: 'cron' });
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
        call('subconscious.tasks_add', {
          title: text,
          ...(recurrence ? { recurrence } : {}),
          ...(needsTools !== undefined ? { needs_tools: needsTools } : {}),
        }),
      `Could not add “${text}”`,
      // The refusal shows under the form, by the input it is about, not as a passing notice.
      (message, _tone, err) => setError({ text: message, input: err instanceof RpcError && err.field === 'recurrence' ? 'cron' : 'title' }),
    );
    if (ok) setError(null);
    else setTitle(text); // give the text back so nothing typed is lost
  };
  const errorId = `${ids}-error`;
  const describedBy = (input: FormError['input'], own?: string) => [own, error?.input === input ? errorId : undefined].filter(Boolean).join(' ') || undefined;

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
          aria-invalid={error?.input === 'title'}
          aria-describedby={describedBy('title')}
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
              aria-invalid={error?.input === 'cron'}
              aria-describedby={describedBy('cron', `${ids}-cron-help`)}
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
        <p id={errorId} className="coral small" role="alert" data-testid="add-task-error" data-input={error.input}>
          <MessageText text={error.text} />
        </p>
      )}
    </form>
  );
}
