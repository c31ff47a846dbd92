/**
 * One thread: its header (who, their status, Stop), its messages oldest first with the text
 * of a running reply streaming in (`bots.message_delta`), a chip per task with its status,
 * approvals inline where the bot asked, and the composer (none in the read-only Subconscious
 * thread). Shown means read: `bots.mark_read` whenever the thread has something unread while it
 * is on screen.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import type { BotWithStatus, Message, Snapshot, Task, ThreadSummary, ThreadView as ThreadData } from '../../../../src/protocol/bots.js';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { Dot } from '../../ui/Dot.js';
import { clockTime, fullTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { ApprovalCard } from './ApprovalCard.js';
import { statusOf } from './BotList.js';
import { Composer } from './Composer.js';
import { joinStreamed, useDeltas, type LiveStep } from './stream.js';

const THREAD_EVENTS = ['bots.message_changed', 'bots.task_changed', 'bots.approval_changed', 'bots.thread_changed', 'bots.bot_changed'] as const;
const PAGE = 50;
const PAGE_MAX = 500;

export function ThreadView(props: { summary: ThreadSummary; snapshot: Snapshot; onEditBot: (botId: string) => void }) {
  const { summary, snapshot } = props;
  const { notify } = useShell();
  const [limit, setLimit] = useState(PAGE);
  const view = useLiveRpc('bots.thread', { thread_id: summary.id, limit }, THREAD_EVENTS);
  const { deltas, steps, version } = useDeltas(summary.id);
  const now = useNow(30_000);
  const members = summary.bot_ids.map((id) => snapshot.bots.find((b) => b.id === id)).filter((b): b is BotWithStatus => !!b);
  const direct = summary.kind === 'direct' ? members[0] : undefined;
  const system = summary.kind === 'system';

  // Shown means read: whenever something unread arrives while the thread is on screen.
  const unreadKey = summary.unread > 0 ? `${summary.last_message?.id ?? ''}:${summary.unread}` : '';
  useEffect(() => {
    if (!unreadKey) return;
    const mark = () => {
      if (document.visibilityState === 'visible') void call('bots.mark_read', { thread_id: summary.id }).catch(() => undefined);
    };
    mark();
    // A page in a background tab marks it when the person comes back to it.
    document.addEventListener('visibilitychange', mark);
    return () => document.removeEventListener('visibilitychange', mark);
  }, [unreadKey, summary.id]);

  // Keep the newest message in view while the person is at the bottom (not when they scrolled up to read).
  const scroller = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [view.data, version]);

  const stop = async (bot: BotWithStatus) => {
    try {
      const r = await call('bots.stop_bot', { bot_id: bot.id });
      notify(r.message);
    } catch (err) {
      notify(`Could not stop @${bot.name}: ${explain(err)}`, 'error');
    }
  };

  const data = view.data;
  const tasks = new Map((data?.tasks ?? []).map((t) => [t.id, t]));
  const busy = members.filter((b) => b.status !== 'idle');
  const headingId = `thread-${summary.id}-heading`;

  return (
    <section className="thread card" aria-labelledby={headingId} data-testid="thread" data-thread-id={summary.id} data-kind={summary.kind}>
      <header className="thread-head">
        <div className="thread-title">
          <h2 id={headingId} tabIndex={-1} data-bots-focus>
            {direct ? direct.label : summary.name}
          </h2>
          <p className="muted small thread-sub">
            {direct ? (
              <BotStatusLine bot={direct} />
            ) : system ? (
              <span>Notifications from the memory world’s reviews of your connected sources</span>
            ) : (
              <span>Group · {members.map((m) => `@${m.name}`).join(', ')}</span>
            )}
          </p>
        </div>
        <div className="thread-actions">
          {busy.map((b) => (
            <button key={b.id} type="button" className="danger" onClick={() => void stop(b)} data-testid="stop-bot" data-bot-name={b.name}>
              {direct ? 'Stop' : `Stop @${b.name}`}
            </button>
          ))}
        </div>
      </header>
      {!direct && busy.length > 0 && (
        <p className="muted small thread-busy">
          {busy.map((b) => (
            <span key={b.id} className="thread-busy-bot">
              <BotStatusLine bot={b} />
            </span>
          ))}
        </p>
      )}

      <div
        className="thread-scroll"
        ref={scroller}
        tabIndex={0}
        role="region"
        aria-label={`Messages with ${direct ? direct.label : summary.name}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {data?.has_more && limit < PAGE_MAX && (
          <button type="button" className="thread-older" onClick={() => setLimit((l) => Math.min(PAGE_MAX, l + PAGE))}>
            Show earlier messages
          </button>
        )}
        {!data && <p className="muted">{view.error ? `The thread could not be read: ${explain(view.error)}` : 'Loading the thread…'}</p>}
        {data && data.messages.length === 0 && <EmptyThread direct={direct} members={members} system={system} />}
        {data && data.messages.length > 0 && (
          <ol className="messages" data-testid="messages">
            {data.messages.map((m, i) => (
              <MessageItem
                key={m.id}
                message={m}
                data={data}
                task={m.task_id ? tasks.get(m.task_id) : undefined}
                streamed={deltas.get(m.id)}
                steps={steps.get(m.id)}
                lastOfTask={m.role === 'bot' && m.task_id !== null && data.messages.findLastIndex((x) => x.task_id === m.task_id && x.role === 'bot') === i}
                now={now}
              />
            ))}
          </ol>
        )}
      </div>

      {system ? (
        <p className="muted small" data-testid="thread-read-only">
          This thread is written by the memory world only; nothing here is sent anywhere. The Memory tab lists the same notifications.
        </p>
      ) : (
        <Composer thread={summary} members={members} />
      )}
    </section>
  );
}

function BotStatusLine(props: { bot: BotWithStatus }) {
  const s = statusOf(props.bot);
  return (
    <span className="status-line" data-testid="thread-status" data-status={props.bot.status}>
      <Dot color={s.color} pulse={s.pulse} /> @{props.bot.name} · {s.text}
    </span>
  );
}

function EmptyThread(props: { direct: BotWithStatus | undefined; members: BotWithStatus[]; system: boolean }) {
  if (props.system) {
    return (
      <div className="thread-empty muted" data-testid="thread-empty">
        <p>No notifications yet.</p>
      </div>
    );
  }
  if (props.direct) {
    return (
      <div className="thread-empty muted" data-testid="thread-empty">
        <p>
          This is your thread with <strong>{props.direct.label}</strong>. Write below: each message becomes a task @{props.direct.name} works on, and its reply
          streams in here.
        </p>
        {props.direct.tools.length > 0 && (
          <p>It may use {props.direct.tools.join(', ')}. Anything that would change something waits for your approval, shown here in the thread.</p>
        )}
      </div>
    );
  }
  return (
    <div className="thread-empty muted" data-testid="thread-empty">
      <p>
        In a group, <code>@name</code> says who answers: write <code>@{props.members[0]?.name ?? 'name'}</code> to ask one bot, or mention several. A bot may
        hand work to another with a <code>HANDOFF:</code> line.
      </p>
    </div>
  );
}

const TASK_LABEL: Record<Task['status'], string> = {
  queued: 'queued',
  working: 'working',
  review: 'needs your review',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  dismissed: 'dismissed',
};

function MessageItem(props: {
  message: Message;
  data: ThreadData;
  task: Task | undefined;
  streamed: string | undefined;
  steps: LiveStep[] | undefined;
  lastOfTask: boolean;
  now: number;
}) {
  const { message: m, data, task } = props;
  const { notify } = useShell();
  const author = m.bot_id ? data.bots.find((b) => b.id === m.bot_id) : undefined;
  const live = m.status === 'streaming' || m.status === 'queued';
  const text = live ? joinStreamed(m.text, props.streamed) : m.text;
  const approvals = props.lastOfTask && task ? data.approvals.filter((a) => a.task_id === task.id) : [];

  const act = async (kind: 'cancel' | 'dismiss') => {
    if (!task) return;
    try {
      await call(kind === 'cancel' ? 'bots.cancel_intent' : 'bots.dismiss_task', { task_id: task.id });
    } catch (err) {
      notify(`Could not ${kind} “${task.title}”: ${explain(err)}`, 'error');
    }
  };

  return (
    <li
      className={`message message-${m.role}${m.heartbeat ? ' message-heartbeat' : ''}`}
      data-testid="message"
      data-message-id={m.id}
      data-role={m.role}
      data-status={m.status}
    >
      <div className="message-meta">
        <span className="message-author">
          {m.role === 'user'
            ? 'You'
            : m.role === 'system'
              ? data.thread.kind === 'system'
                ? 'Subconscious'
                : 'Note'
              : author
                ? `${author.label} (@${author.name})`
                : 'A bot'}
        </span>
        <time dateTime={new Date(m.created_at).toISOString()} title={fullTime(m.created_at)} className="muted small">
          {clockTime(m.created_at, props.now)}
        </time>
        {m.heartbeat && (
          <span className="badge badge-quiet" title="Written by the heartbeat (a resume or a check-in)">
            heartbeat
          </span>
        )}
        {m.role === 'bot' && task && props.lastOfTask && <TaskChip task={task} onCancel={() => void act('cancel')} onDismiss={() => void act('dismiss')} />}
      </div>
      {/* A bot's reply is one live region from the start (a region added together with its text is not read out);
          the reply is read once it is complete (aria-busy holds it while it streams). */}
      <div className="message-body" data-testid="message-live" aria-live={m.role === 'bot' ? 'polite' : undefined} aria-busy={m.status === 'streaming'}>
        {text ? (
          <div className="message-text" data-testid="message-text">
            <MessageText text={text} />
            {m.status === 'streaming' && <span className="cursor" aria-hidden="true" />}
          </div>
        ) : (
          live && (
            <p className="muted small message-waiting" data-testid="message-waiting">
              {m.status === 'queued' ? 'Waiting for its turn…' : approvals.some((a) => a.state === 'pending') ? 'Waiting for your approval…' : 'Thinking…'}
            </p>
          )
        )}
      </div>
      {live && props.steps && props.steps.length > 0 && (
        <ul className="tool-steps small muted" aria-label="Tools used so far" data-testid="tool-steps">
          {props.steps.map((s) => (
            <li key={s.id} data-outcome={s.outcome ?? 'running'}>
              <code>{s.tool}</code> {s.outcome === null ? '…' : s.outcome === 'ok' ? '✓' : s.outcome}
            </li>
          ))}
        </ul>
      )}
      {(m.status === 'error' || m.status === 'stopped') && (
        <p className={`small ${m.status === 'error' ? 'coral' : 'muted'}`} data-testid="message-error">
          {m.status === 'stopped' ? (
            <MessageText text={m.error ?? 'Stopped.'} />
          ) : (
            <>
              {m.interrupted ? 'Interrupted' : 'Failed'}: <MessageText text={m.error ?? 'the run ended with an error.'} />
            </>
          )}
        </p>
      )}
      {task?.status === 'review' && task.review_note && props.lastOfTask && (
        <p className="small review-note">
          <strong>Recommended:</strong> <MessageText text={task.review_note} />
        </p>
      )}
      {approvals.length > 0 && (
        <ul className="approvals-inline">
          {approvals.map((a) => (
            <li key={a.id}>
              <ApprovalCard approval={a} now={props.now} />
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

function TaskChip(props: { task: Task; onCancel: () => void; onDismiss: () => void }) {
  const { task } = props;
  const kind = task.error_kind && task.status === 'failed' ? ` · ${task.error_kind.replace('_', ' ')}` : '';
  const color =
    task.status === 'working'
      ? 'blue'
      : task.status === 'queued' || task.status === 'review'
        ? 'amber'
        : task.status === 'done'
          ? 'green'
          : task.status === 'failed'
            ? 'coral'
            : 'gray';
  return (
    <span className="task-chip-wrap">
      <span className={`chip chip-${task.status}`} data-testid="task-chip" data-status={task.status} title={task.error ?? task.title}>
        <Dot color={color} pulse={task.status === 'working'} />
        task {TASK_LABEL[task.status]}
        {kind}
      </span>
      {task.taken_over_from && (
        <span
          className="muted small"
          data-testid="task-taken-over"
          title="Its worker stopped during the run; another worker (or this one after a restart) took the job over."
        >
          taken over from {task.taken_over_from}
        </span>
      )}
      {(task.status === 'queued' || task.status === 'working') && (
        <button type="button" className="link small" onClick={props.onCancel} aria-label={`Cancel the task “${task.title}”`}>
          Cancel
        </button>
      )}
      {(task.status === 'review' || task.status === 'failed') && (
        <button type="button" className="link small" onClick={props.onDismiss} aria-label={`Dismiss the task “${task.title}”`}>
          Dismiss
        </button>
      )}
    </span>
  );
}
