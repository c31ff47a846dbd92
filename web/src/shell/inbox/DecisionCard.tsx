/**
 * One thing that waits for the person, as one card for every world: what it is and why it
 * asks; for a tool call exactly what will run (tool and its server, the arguments by the tool's
 * schema, the model, tokens spent and estimated, the outside text the run read); and the
 * answers that fit it — Accept, Edit, Respond, Ignore (a check-in has no arguments to edit, a
 * failing world only opens its tab). Every answer goes over RPC with `via: 'page'`.
 */
import { useState } from 'react';
import type { ApprovalContext } from '../../../../src/protocol/index.js';
import { call, explain } from '../../api/rpc.js';
import { relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { confirmActionable } from '../../tabs/actionables/confirm.js';
import { ArgumentsEditor, ArgumentsView } from './Arguments.js';
import { worldLabel, type InboxItem } from './items.js';

type Answer = 'accept' | 'edit' | 'respond' | 'ignore';

export interface CardProps {
  item: InboxItem;
  now: number;
  /** Why actions cannot be used now (the daemon does not answer), or null. */
  disabledReason: string | null;
  onAnswered: (text: string) => void;
  open: (tab: string, detail?: string) => void;
}

/** What the card is called and what it asks, in words. */
export function itemTitle(item: InboxItem): string {
  switch (item.kind) {
    case 'escalation':
      return item.escalation.title;
    case 'approval':
      return `${item.approval.tool} on ${item.approval.server}`;
    case 'checkin':
      return item.bot ? `${item.bot} asks` : 'A bot asks';
    case 'write_rights':
      return item.task.title;
    case 'actionable':
      return item.actionable.title;
    case 'failing':
      return `${worldLabel(item.world)} is failing`;
  }
}

function call_(
  item: InboxItem,
): { tool: string; server: string; args: Record<string, unknown>; schema: Record<string, unknown> | null; context: ApprovalContext | null } | null {
  if (item.kind === 'escalation' && item.escalation.action) {
    const a = item.escalation.action;
    return { tool: a.tool, server: a.server, args: a.arguments, schema: a.input_schema, context: item.escalation.context };
  }
  if (item.kind === 'approval') {
    const a = item.approval;
    const args = a.arguments && typeof a.arguments === 'object' ? (a.arguments as Record<string, unknown>) : {};
    return { tool: a.tool, server: a.server, args, schema: a.input_schema, context: a.context };
  }
  return null;
}

async function send(item: InboxItem, answer: Answer, extra: { arguments?: Record<string, unknown>; text?: string }): Promise<string> {
  const who = { via: 'page' as const };
  switch (item.kind) {
    case 'escalation':
      await call('subconscious.escalations_answer', { id: item.escalation.id, answer, ...extra, ...who });
      return answer === 'ignore'
        ? `Skipped: “${item.escalation.title}”.`
        : `Answered “${item.escalation.title}”: it runs now; the result shows in the Activity Log.`;
    case 'approval':
      if (item.world === 'bots' || item.world === 'heartbeat') await call('bots.answer_approval', { id: item.approval.id, answer, ...extra, ...who });
      else await call('approvals.answer', { id: item.approval.id, answer, ...extra, ...who });
      return answer === 'ignore' ? `Not run: ${item.approval.tool}.` : answer === 'respond' ? 'Sent your answer to the run.' : `Running ${item.approval.tool}.`;
    case 'checkin': {
      const c = item.checkin;
      if (answer === 'respond') {
        // A reply in the thread answers the check-in by itself (seed 2 §6.5).
        await call('bots.send_message', { thread_id: c.thread_id, text: extra.text ?? '' });
        return 'Replied in the thread.';
      }
      await call('bots.resolve_checkin', { id: c.id, resolution: answer === 'accept' ? 'retry' : 'dismissed', ...who });
      void call('bots.mark_user_active', { thread_id: c.thread_id }).catch(() => undefined);
      return answer === 'accept' ? 'It tries again now.' : 'Left as it is.';
    }
    case 'write_rights':
      await call('subconscious.tasks_update', { task_id: item.task.id, needs_tools: answer === 'accept' });
      return answer === 'accept' ? `“${item.task.title}” may make the writes its words name.` : `“${item.task.title}” stays read-only.`;
    case 'actionable':
      await call(answer === 'accept' ? 'conscious.complete' : 'conscious.dismiss', { id: item.actionable.id });
      return answer === 'accept' ? `Done: “${item.actionable.title}”.` : `Dismissed: “${item.actionable.title}”.`;
    case 'failing':
      return '';
  }
}

/** A runtime's bot that said BLOCKED: only its runtime can give it what it waits for. */
function cannotRetry(item: Extract<InboxItem, { kind: 'checkin' }>): boolean {
  return item.runtime !== null && item.checkin.source === 'blocked';
}

function fits(item: InboxItem): Record<Answer, string | null> {
  const c = call_(item);
  switch (item.kind) {
    case 'escalation':
    case 'approval':
      return {
        accept: item.kind === 'escalation' && item.escalation.skill_related ? null : c ? 'Accept' : 'Go ahead',
        edit: c ? 'Edit' : null,
        respond: 'Respond',
        ignore: 'Ignore',
      };
    case 'checkin':
      // A runtime's bot is answered in its runtime (this page cannot write to its thread), and what
      // blocks it is given there: the heartbeat's retry would only ask the same blocked bot again.
      return {
        accept: cannotRetry(item) ? null : 'Try again',
        edit: null,
        respond: item.runtime ? null : 'Respond',
        ignore: 'Ignore',
      };
    case 'write_rights':
      return { accept: 'Allow its writes', edit: null, respond: null, ignore: 'Keep read-only' };
    case 'actionable':
      // Confirm (its own button) hands it to the agent through the approval gate; Done says it is handled already.
      return { accept: 'Done', edit: null, respond: null, ignore: 'Dismiss' };
    case 'failing':
      return { accept: null, edit: null, respond: null, ignore: null };
  }
}

export function DecisionCard(props: CardProps) {
  const { item } = props;
  const [mode, setMode] = useState<'view' | 'edit' | 'respond'>('view');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [reply, setReply] = useState('');
  const title = itemTitle(item);
  const headingId = `inbox-${item.key.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const tool = call_(item);
  const labels = fits(item);
  const disabled = busy || props.disabledReason !== null;

  const answer = async (a: Answer, extra: { arguments?: Record<string, unknown>; text?: string } = {}) => {
    setBusy(true);
    setError(null);
    try {
      props.onAnswered(await send(item, a, extra));
    } catch (err) {
      setError(explain(err));
      setBusy(false);
    }
  };

  return (
    <article
      className={`card inbox-card inbox-${item.kind}`}
      aria-labelledby={headingId}
      data-testid="inbox-card"
      data-kind={item.kind}
      data-world={item.world}
    >
      <header className="inbox-head">
        <h3 id={headingId}>{title}</h3>
        <span className={`badge priority priority-${item.priority}`} data-testid="priority">
          {item.priority}
        </span>
        <span className="badge inbox-world">{worldLabel(item.world)}</span>
      </header>
      <Body item={item} now={props.now} />
      {tool && (
        <div className="inbox-call" data-testid="inbox-call">
          <p className="inbox-will-run">
            <strong>{item.kind === 'escalation' || mode !== 'edit' ? 'Will run:' : 'Runs:'}</strong> <code data-testid="inbox-tool">{tool.tool}</code> on the{' '}
            <strong data-testid="inbox-server">{tool.server}</strong> tool server
          </p>
          {mode === 'edit' ? (
            <ArgumentsEditor
              schema={tool.schema}
              args={tool.args}
              tool={tool.tool}
              busy={busy}
              disabledReason={props.disabledReason}
              serverError={error}
              onSubmit={(args) => void answer('edit', { arguments: args })}
              onCancel={() => setMode('view')}
            />
          ) : (
            <ArgumentsView schema={tool.schema} args={tool.args} tool={tool.tool} />
          )}
          {tool.context && <RunContext context={tool.context} />}
        </div>
      )}
      {mode === 'respond' && (
        <form
          className="inbox-respond"
          onSubmit={(e) => {
            e.preventDefault();
            if (reply.trim()) void answer('respond', { text: reply.trim() });
          }}
        >
          <label htmlFor={`${headingId}-reply`}>Your answer (the run continues with it{tool ? '; the call above does not run' : ''})</label>
          <textarea id={`${headingId}-reply`} rows={3} value={reply} onChange={(e) => setReply(e.target.value)} data-testid="inbox-reply" />
          <div className="inbox-actions">
            <button type="submit" className="primary" disabled={disabled || !reply.trim()} title={props.disabledReason ?? undefined}>
              Send answer
            </button>
            <button type="button" onClick={() => setMode('view')}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {mode === 'view' && (
        <div className="inbox-actions" role="group" aria-label={`Answers for ${title}`}>
          {item.kind === 'actionable' && (
            <button
              type="button"
              className="primary"
              disabled={disabled}
              title={props.disabledReason ?? 'The agent takes it on as a one-off task; whatever it would send or change asks you first, here'}
              aria-label={`Confirm: ${title}`}
              onClick={() => {
                setBusy(true);
                setError(null);
                confirmActionable(item.actionable).then(props.onAnswered, (err: unknown) => {
                  setError(explain(err));
                  setBusy(false);
                });
              }}
            >
              Confirm
            </button>
          )}
          {labels.accept && (
            <button
              type="button"
              className={item.kind === 'actionable' ? undefined : 'primary'}
              disabled={disabled}
              title={props.disabledReason ?? undefined}
              aria-label={`${labels.accept}: ${title}`}
              onClick={() => void answer('accept')}
            >
              {labels.accept}
            </button>
          )}
          {item.kind === 'escalation' && item.escalation.skill_related && (
            <button
              type="button"
              className="primary"
              onClick={() => props.open('skills', item.escalation.skill_server ?? undefined)}
              title={
                item.escalation.skill_server
                  ? `Open Skills on “${item.escalation.skill_server}”; this card resolves by itself once it is healthy again`
                  : 'Open Skills'
              }
            >
              Fix in Skills
            </button>
          )}
          {labels.edit && (
            <button
              type="button"
              disabled={disabled}
              title={props.disabledReason ?? undefined}
              aria-label={`Edit the arguments: ${title}`}
              onClick={() => setMode('edit')}
            >
              {labels.edit}
            </button>
          )}
          {labels.respond && (
            <button
              type="button"
              disabled={disabled}
              title={props.disabledReason ?? undefined}
              aria-label={`Respond: ${title}`}
              onClick={() => setMode('respond')}
            >
              {labels.respond}
            </button>
          )}
          {labels.ignore && (
            <button
              type="button"
              disabled={disabled}
              title={props.disabledReason ?? undefined}
              aria-label={`${labels.ignore}: ${title}`}
              onClick={() => void answer('ignore')}
            >
              {labels.ignore}
            </button>
          )}
          <button type="button" className="link" onClick={() => props.open(item.tab)} aria-label={`Open ${worldLabel(item.world)}: ${title}`}>
            Open {worldLabel(item.world)}
          </button>
        </div>
      )}
      {error && mode !== 'edit' && (
        <p className="coral small" role="alert">
          <MessageText text={error} />
        </p>
      )}
      {props.disabledReason && mode === 'view' && <p className="small muted inbox-disabled">{props.disabledReason}</p>}
    </article>
  );
}

function Body(props: { item: InboxItem; now: number }) {
  const { item } = props;
  const when = <span className="small muted"> · {relativeTime(item.at, props.now)}</span>;
  switch (item.kind) {
    case 'escalation': {
      const e = item.escalation;
      return (
        <>
          <p>
            {e.action ? 'Held for you: the task’s words do not ask for this write.' : <MessageText text={e.description} />}
            {when}
          </p>
          {e.skill_related && e.skill_server && (
            <p className="small" data-testid="inbox-skill">
              It is about the skill “{e.skill_server}”: once that skill is healthy again, this card resolves by itself.
            </p>
          )}
          {!e.action && !e.skill_related && (
            <p className="small muted">Accepting lets the agent carry this out with its tools; it asks again before any write it was not shown.</p>
          )}
          {e.analysis && e.analysis.trim() && e.analysis.trim() !== e.description.trim() && (
            <details>
              <summary>What the run found</summary>
              <p>
                <MessageText text={e.analysis.trim()} />
              </p>
            </details>
          )}
        </>
      );
    }
    case 'approval':
      return (
        <p>
          <MessageText text={item.approval.reason} />
          {when}
          {item.approval.expires_at !== null && (
            <span className="small muted"> · expires {relativeTime(item.approval.expires_at, props.now)} if nobody answers</span>
          )}
        </p>
      );
    case 'checkin':
      return (
        <>
          <p>
            <MessageText text={item.checkin.question} />
            {when}
          </p>
          {item.runtime && (
            <p className="small muted" data-testid="inbox-runtime-note">
              {cannotRetry(item)
                ? `Only ${item.runtime} can unblock it: give the bot what it needs there. This page cannot talk to your runtime’s bots, and trying again here would only ask the same blocked bot again; Ignore clears this card.`
                : `Answer it in ${item.runtime}: this page cannot talk to your runtime’s bots. Try again resets its attempts and sends ${item.runtime} a resume.`}
            </p>
          )}
        </>
      );
    case 'write_rights':
      return (
        <p>
          {item.task.write_choice === 'heartbeat_md'
            ? 'Its line in HEARTBEAT.md is marked [write]. A file cannot grant write rights: it stays read-only until you allow them.'
            : 'An older version gave this task write rights from its title alone; confirm them or keep it read-only.'}
        </p>
      );
    case 'actionable':
      return (
        <p>
          <MessageText text={item.actionable.description} />{' '}
          <span className="small muted">From {item.actionable.source_label}; it needs your confirmation.</span>
        </p>
      );
    case 'failing':
      return (
        <p>
          {item.instance.halted
            ? `Halted: ${item.instance.halt_reason ?? 'it stopped after repeated failures'}.`
            : // The world card's words: "failed once", "failed 3 times in a row".
              `Failed ${item.instance.consecutive_failures === 1 ? 'once' : `${item.instance.consecutive_failures} times in a row`}${item.instance.last_error ? ':' : '.'}`}{' '}
          {item.instance.last_error && <MessageText text={item.instance.last_error} />}
        </p>
      );
  }
}

function RunContext(props: { context: ApprovalContext }) {
  const c = props.context;
  const spent = c.spent.input_tokens + c.spent.output_tokens;
  const next = c.estimate.input_tokens + c.estimate.output_tokens;
  return (
    <dl className="inbox-context small" data-testid="inbox-context">
      <div>
        <dt>Model</dt>
        <dd data-testid="inbox-model">{c.model ?? 'unknown'}</dd>
      </div>
      <div>
        <dt>Cost</dt>
        <dd data-testid="inbox-cost">
          {c.spent.calls === 0
            ? // The call that asked for the tool is metered when its stream closes, after this question.
              'Nothing counted yet (the model call that asked for this is counted when it closes)'
            : `${spent.toLocaleString()} tokens in ${c.spent.calls} finished model call${c.spent.calls === 1 ? '' : 's'}`}
          ; about {next.toLocaleString()} {c.spent.calls === 0 ? 'tokens' : 'more'} to finish after this call (an estimate)
        </dd>
      </div>
      <div>
        <dt>Outside text it read</dt>
        <dd data-testid="inbox-read">
          {c.read.length === 0 ? (
            'none'
          ) : (
            <ul>
              {c.read.map((r, i) => (
                <li key={i}>
                  <strong>{r.what}</strong>: <q>{r.excerpt}</q>
                </li>
              ))}
            </ul>
          )}
        </dd>
      </div>
    </dl>
  );
}
