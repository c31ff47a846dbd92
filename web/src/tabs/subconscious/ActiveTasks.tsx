/**
 * Seed 1's Active Tasks, each saying why it is or is not looked at next (issue 10: "unchanged
 * since 14:05", "not due until 09:00", "waiting for your answer to …", "model unavailable …",
 * "switched off"). System tasks are plain text with a green dot and a "default" badge (one
 * switched off gets its switch back; never a delete). User tasks get a toggle, Edit (rename and
 * reschedule) and Delete with an Undo.
 *
 * Write rights are the person's choice (issue 9): the add form's "Writes" is off unless chosen;
 * a title that sounds like it sends or changes things gets a question, never a grant; rights an
 * older version guessed are flagged and asked about, and until answered the task asks before
 * every write. The form's errors, its own and the daemon's refusals, show under it until the
 * next add or edit succeeds.
 */
import { useId, useRef, useState, type FormEvent } from 'react';
import { RpcError, call, explain } from '../../api/rpc.js';
import type { Task } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import { cronInWords } from '../../ui/cron-words.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { Switch } from '../../ui/Switch.js';
import { optimistic } from './optimistic.js';
import { whyText } from './why.js';

export function ActiveTasks(props: { tasks: Resource<Task[]> }) {
  const { tasks } = props;
  const list = (tasks.data ?? []).filter((t) => !t.completed);
  const system = list.filter((t) => t.source === 'system');
  const user = list.filter((t) => t.source === 'user');
  const [formError, setFormError] = useState<FormError | null>(null);
  const edited = () => setFormError(null);
  const now = useNow(30_000);
  return (
    <Section id="active-tasks" title="Active Tasks" count={tasks.data ? list.length : undefined}>
      {!tasks.data && <p className="muted">{tasks.error ? 'The tasks could not be read.' : 'Loading tasks…'}</p>}
      <ul className="task-list">
        {system.map((t) => (
          <SystemTask key={t.id} task={t} tasks={tasks} onEdited={edited} now={now} />
        ))}
        {user.map((t) => (
          <UserTask key={t.id} task={t} tasks={tasks} onEdited={edited} now={now} />
        ))}
      </ul>
      {tasks.data && user.length === 0 && (
        <p className="muted small" data-testid="no-user-tasks">
          No task of your own yet. Add one below: it is checked at every tick, once, or on a schedule you give.
        </p>
      )}
      <AddTask tasks={tasks} error={formError} setError={setFormError} />
    </Section>
  );
}

/** The schedule badge: `once`, or a cron schedule in words (the expression itself when it has none). */
function recurrenceText(r: string): string | null {
  if (r === 'once') return 'once';
  if (r.startsWith('cron:')) {
    const expr = r.slice(5).trim();
    return cronInWords(expr) ?? `cron ${expr}`;
  }
  return null;
}

interface TaskProps {
  task: Task;
  tasks: Resource<Task[]>;
  now: number;
  /** Called after the daemon took an edit (a toggle, a rename, a delete). */
  onEdited: () => void;
}

async function setTaskEnabled(props: TaskProps, enabled: boolean, notify: Parameters<typeof optimistic>[4]): Promise<void> {
  const t = props.task;
  const ok = await optimistic(
    props.tasks,
    (d) => d.map((x) => (x.id === t.id ? { ...x, enabled } : x)),
    () => call('subconscious.tasks_update', { task_id: t.id, enabled }),
    `Could not ${enabled ? 'enable' : 'pause'} “${t.title}”`,
    notify,
  );
  if (ok) props.onEdited();
}

/** The person's answer about write rights (a suggestion, an older version's guess, a `[write]` line): theirs from now on. */
async function setTaskWrites(props: TaskProps, needs_tools: boolean, notify: Parameters<typeof optimistic>[4]): Promise<void> {
  const t = props.task;
  const ok = await optimistic(
    props.tasks,
    (d) => d.map((x) => (x.id === t.id ? { ...x, needs_tools, write_choice: 'person' as const } : x)),
    () => call('subconscious.tasks_update', { task_id: t.id, needs_tools }),
    `Could not change what “${t.title}” may do`,
    notify,
  );
  if (ok) {
    props.onEdited();
    notify(needs_tools ? `“${t.title}” may now act without asking.` : `“${t.title}” only reads now: it asks before any write.`, 'info');
  }
}

/** Why it is (not) looked at next, under its title. */
function Why(props: { task: Task; now: number }) {
  const kind = props.task.why.kind;
  return (
    <p className={`task-why${kind === 'model_unavailable' ? ' coral' : ''}`} data-testid="task-why" data-kind={kind}>
      <MessageText text={whyText(props.task, props.now)} />
    </p>
  );
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
      data-why={t.why.kind}
    >
      <div className="task-line">
        <Dot color={t.enabled ? 'green' : 'gray'} />
        <span className="task-title">{t.title}</span>
        {t.why.kind === 'waiting' && <WaitingBadge />}
        {t.needs_tools && <WritesBadge unconfirmed={t.write_choice !== 'person'} />}
        {t.origin === 'heartbeat_md' ? (
          <span className="badge" title="A line of HEARTBEAT.md in your workspace: edit the file to change or remove it">
            HEARTBEAT.md
          </span>
        ) : (
          <span className="badge">default</span>
        )}
        {!t.enabled && (
          <span className="task-controls">
            <Switch checked={false} label={`Enable task: ${t.title}`} onChange={(on) => void setTaskEnabled(props, on, notify)} />
          </span>
        )}
      </div>
      <Why task={t} now={props.now} />
      {t.origin === 'heartbeat_md' && t.write_choice === 'heartbeat_md' && t.needs_tools && (
        <div className="task-question" data-testid="write-confirm-heartbeat" role="group" aria-label={`Write rights of ${t.title}`}>
          <p className="small">
            <strong>Pending your confirmation:</strong> its line in <code>HEARTBEAT.md</code> is marked <code>[write]</code>, asking to let it send or change
            things without asking. A file is not a person’s say: until you confirm, it only reads and asks first.
          </p>
          <span className="task-question-actions">
            <button type="button" onClick={() => void setTaskWrites(props, true, notify)}>
              Confirm
            </button>
            <button type="button" onClick={() => void setTaskWrites(props, false, notify)}>
              Keep read-only
            </button>
          </span>
        </div>
      )}
      {t.origin === 'heartbeat_md' && t.write_suggested && !t.needs_tools && t.write_choice !== 'person' && (
        <p className="small muted task-note" data-testid="write-suggestion-heartbeat">
          This sounds like it sends or changes things, but it only reads: to let it act without asking, mark its line <code>- [write] …</code> in{' '}
          <code>HEARTBEAT.md</code>, then confirm it here.
        </p>
      )}
    </li>
  );
}

function WaitingBadge() {
  return (
    <span className="badge badge-waiting" data-testid="task-waiting" title="Paused: this task runs again once you answer its card under Needs you">
      waiting for you
    </span>
  );
}

function WritesBadge(props: { unconfirmed?: boolean }) {
  return props.unconfirmed ? (
    <span
      className="badge badge-waiting"
      title="Write rights nobody confirmed yet (an older version's guess, or a [write] line in HEARTBEAT.md): until you answer, it asks before every write"
    >
      writes?
    </span>
  ) : (
    <span className="badge badge-quiet" title="It may carry out the writes its own words name without asking; anything else still asks first">
      writes
    </span>
  );
}

function UserTask(props: TaskProps) {
  const { notify } = useShell();
  const t = props.task;
  const [editing, setEditing] = useState(false);
  const pending = t.id.startsWith('pending-');
  const rec = recurrenceText(t.recurrence);
  const toggle = (enabled: boolean) => setTaskEnabled(props, enabled, notify);
  const setWrites = (needs_tools: boolean) => setTaskWrites(props, needs_tools, notify);
  const remove = async () => {
    const ok = await optimistic(
      props.tasks,
      (d) => d.filter((x) => x.id !== t.id),
      () => call('subconscious.tasks_remove', { task_id: t.id }),
      `Could not delete “${t.title}”`,
      notify,
    );
    if (!ok) return;
    props.onEdited();
    notify(`Deleted “${t.title}”.`, 'info', {
      label: 'Undo',
      // The row (and the button the keyboard was on) is gone: the keyboard lands on Undo.
      focus: true,
      run: async () => {
        try {
          // A removal is a soft delete: the same task comes back, as it was.
          await call('subconscious.tasks_restore', { task_id: t.id });
          notify(`Restored “${t.title}”.`, 'info');
        } catch (err) {
          notify(`Could not restore “${t.title}”: ${explain(err)}`, 'error');
        } finally {
          void props.tasks.reload();
        }
      },
    });
  };
  return (
    <li
      className={`task-row task-user${t.enabled ? '' : ' task-paused'}`}
      data-testid="task-row"
      data-task-id={t.id}
      data-source="user"
      data-enabled={t.enabled}
      data-why={t.why.kind}
    >
      <div className="task-line">
        <Dot color={t.enabled ? 'green' : 'gray'} />
        <span className="task-title">{t.title}</span>
        {t.why.kind === 'waiting' && <WaitingBadge />}
        {rec && (
          <span className="badge badge-quiet" title={`Recurrence: ${t.recurrence}`}>
            {rec}
          </span>
        )}
        {t.needs_tools && <WritesBadge unconfirmed={t.write_choice === 'older_version'} />}
        <span className="task-controls">
          <Switch checked={t.enabled} label={`Enable task: ${t.title}`} onChange={toggle} disabled={pending} />
          <button
            type="button"
            className="icon-button task-edit"
            aria-label={`Edit task: ${t.title}`}
            title="Rename or reschedule"
            aria-expanded={editing}
            onClick={() => setEditing(!editing)}
            disabled={pending}
          >
            <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
              <path d="M11.3 1.7l3 3-8.6 8.6H2.7v-3zM10 3l3 3" fill="none" stroke="currentColor" strokeWidth="1.5" />
            </svg>
          </button>
          <button type="button" className="icon-button task-delete" aria-label={`Delete task: ${t.title}`} title="Delete" onClick={remove} disabled={pending}>
            <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
              <path d="M6 2h4l1 1h3v2H2V3h3l1-1zm-2 4h8l-.6 8H4.6L4 6z" fill="currentColor" />
            </svg>
          </button>
        </span>
      </div>
      <Why task={t} now={props.now} />
      {t.write_choice === 'older_version' && t.needs_tools && (
        <div className="task-question" data-testid="write-review" role="group" aria-label={`Write rights of ${t.title}`}>
          <p className="small">
            <strong>Set automatically by an older version</strong> of subconscious, from words in its title: it was allowed to send or change things without
            asking. Keep that? Until you answer, it asks before every write.
          </p>
          <span className="task-question-actions">
            <button type="button" onClick={() => void setWrites(true)}>
              Allow writes
            </button>
            <button type="button" onClick={() => void setWrites(false)}>
              Make read-only
            </button>
          </span>
        </div>
      )}
      {t.write_choice === 'none' && t.write_suggested && !t.needs_tools && (
        <div className="task-question" data-testid="write-suggestion" role="group" aria-label={`Write rights of ${t.title}`}>
          <p className="small">This sounds like it sends or changes things: allow it to act without asking? For now it only reads and asks first.</p>
          <span className="task-question-actions">
            <button type="button" onClick={() => void setWrites(true)}>
              Allow it to act
            </button>
            <button type="button" onClick={() => void setWrites(false)}>
              Keep read-only
            </button>
          </span>
        </div>
      )}
      {editing && <EditTask task={t} tasks={props.tasks} done={() => setEditing(false)} onEdited={props.onEdited} />}
    </li>
  );
}

type RecurrenceChoice = 'default' | 'once' | 'cron';

function choiceOf(recurrence: string): { choice: RecurrenceChoice; cron: string } {
  if (recurrence === 'once') return { choice: 'once', cron: '' };
  if (recurrence.startsWith('cron:')) return { choice: 'cron', cron: recurrence.slice(5).trim() };
  return { choice: 'default', cron: '' };
}

function recurrenceOf(choice: RecurrenceChoice, cron: string): string {
  return choice === 'once' ? 'once' : choice === 'cron' ? `cron:${cron.trim()}` : 'pending';
}

/** Rename and reschedule a user task in place. */
function EditTask(props: { task: Task; tasks: Resource<Task[]>; done: () => void; onEdited: () => void }) {
  const ids = useId();
  const t = props.task;
  const start = choiceOf(t.recurrence);
  const [title, setTitle] = useState(t.title);
  const [choice, setChoice] = useState<RecurrenceChoice>(start.choice);
  const [cron, setCron] = useState(start.cron);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const text = title.trim();
    if (!text) return setError('Write what the task should check or do.');
    if (choice === 'cron' && !cron.trim()) return setError('Give a cron expression, e.g. `0 9 * * 1-5` (weekdays at 9:00).');
    const recurrence = recurrenceOf(choice, cron);
    const patch = { ...(text !== t.title ? { title: text } : {}), ...(recurrence !== t.recurrence ? { recurrence } : {}) };
    if (!Object.keys(patch).length) return props.done();
    setBusy(true);
    try {
      await call('subconscious.tasks_update', { task_id: t.id, ...patch });
      setError(null);
      props.onEdited();
      props.done();
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(false);
      void props.tasks.reload();
    }
  };
  return (
    <form className="edit-task" onSubmit={save} aria-label={`Edit ${t.title}`} data-testid="edit-task" noValidate>
      <span className="field edit-title">
        <label htmlFor={`${ids}-title`}>Title</label>
        <input id={`${ids}-title`} type="text" value={title} maxLength={500} onChange={(e) => setTitle(e.target.value)} aria-invalid={!!error} />
      </span>
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
          />
        </span>
      )}
      <span className="edit-actions">
        <button type="submit" className="primary" disabled={busy}>
          Save
        </button>
        <button type="button" onClick={props.done}>
          Cancel
        </button>
      </span>
      {error && (
        <p className="coral small" role="alert" data-testid="edit-task-error">
          <MessageText text={error} />
        </p>
      )}
    </form>
  );
}

/** `read` leaves `needs_tools` out: a task only reads unless the person chooses otherwise. */
type IntentChoice = 'read' | 'write';
/** What the add form says went wrong, and which of its inputs it is about. */
interface FormError {
  text: string;
  input: 'title' | 'cron';
}

function AddTask(props: { tasks: Resource<Task[]>; error: FormError | null; setError: (error: FormError | null) => void }) {
  const { notify } = useShell();
  const { error, setError } = props;
  const ids = useId();
  const [title, setTitle] = useState('');
  const [choice, setChoice] = useState<RecurrenceChoice>('default');
  const [cron, setCron] = useState('');
  const [intent, setIntent] = useState<IntentChoice>('read');
  const temp = useRef(0);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const text = title.trim();
    if (!text) return setError({ text: 'Write what the task should check or do.', input: 'title' });
    if (choice === 'cron' && !cron.trim()) return setError({ text: 'Give a cron expression, e.g. `0 9 * * 1-5` (weekdays at 9:00).', input: 'cron' });
    setError(null);
    const recurrence = choice === 'once' ? 'once' : choice === 'cron' ? `cron:${cron.trim()}` : undefined;
    const writes = intent === 'write';
    const placeholder: Task = {
      id: `pending-${++temp.current}`,
      title: text,
      source: 'user',
      origin: 'user',
      recurrence: recurrence ?? 'pending',
      enabled: true,
      needs_tools: writes,
      write_choice: writes ? 'person' : 'none',
      write_suggested: false,
      last_run_at: null,
      next_run_at: null,
      completed: false,
      updated_at: Date.now(),
      created_at: Date.now(),
      unchanged_since: null,
      why: { kind: 'due', at: null, until: null, detail: null },
    };
    setTitle('');
    const ok = await optimistic(
      props.tasks,
      (d) => [...d, placeholder],
      () => call('subconscious.tasks_add', { title: text, ...(recurrence ? { recurrence } : {}), ...(writes ? { needs_tools: true } : {}) }),
      `Could not add “${text}”`,
      notify,
      // The refusal shows under the form, by the input it is about, not as a passing notice.
      (message, err) => setError({ text: message, input: err instanceof RpcError && err.field === 'recurrence' ? 'cron' : 'title' }),
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
          <select id={`${ids}-writes`} value={intent} onChange={(e) => setIntent(e.target.value as IntentChoice)} aria-describedby={`${ids}-writes-help`}>
            <option value="read">no, it asks first</option>
            <option value="write">yes, without asking</option>
          </select>
          <span id={`${ids}-writes-help`} className="visually-hidden">
            Whether the task may send or change things by itself. Even then, only what its own words name; anything else asks first.
          </span>
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
