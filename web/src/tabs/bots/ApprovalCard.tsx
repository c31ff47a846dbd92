/**
 * A bot's tool call waiting for the person, inline in the thread: which tool on which server,
 * why it asks, and its arguments exactly as the model wrote them — shown as text (a <pre>),
 * never as markup. Approve runs the tool once; Deny tells the bot it was denied. Answered or
 * expired ones stay as a one-line record.
 */
import { useState } from 'react';
import type { BotApproval } from '../../../../src/protocol/bots.js';
import { call, explain } from '../../api/rpc.js';
import { relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';

const MAX_ARGS_CHARS = 20_000;

export function argumentsText(args: unknown): string {
  let text: string;
  try {
    text = typeof args === 'string' ? args : (JSON.stringify(args, null, 2) ?? String(args));
  } catch {
    text = String(args);
  }
  return text.length > MAX_ARGS_CHARS ? `${text.slice(0, MAX_ARGS_CHARS)}\n… (${text.length - MAX_ARGS_CHARS} more characters)` : text;
}

export function ApprovalCard(props: { approval: BotApproval; now: number }) {
  const a = props.approval;
  const [busy, setBusy] = useState<'approve' | 'deny' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const titleId = `approval-${a.id}-title`;

  const answer = async (approve: boolean) => {
    setBusy(approve ? 'approve' : 'deny');
    setError(null);
    try {
      await call('bots.answer_approval', { id: a.id, approve });
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(null);
    }
  };

  if (a.state !== 'pending') {
    return (
      <p className={`approval-record small approval-${a.state}`} data-testid="approval-record" data-state={a.state}>
        {a.state === 'approved' ? 'Approved' : a.state === 'denied' ? 'Denied' : 'Expired (not run)'}: <code>{a.tool}</code> on {a.server}
        {a.answered_at ? ` · ${relativeTime(a.answered_at, props.now)}` : a.expired_at ? ` · ${relativeTime(a.expired_at, props.now)}` : ''}
      </p>
    );
  }
  return (
    <div className="approval-inline card" role="group" aria-labelledby={titleId} data-testid="bot-approval" data-approval-id={a.id}>
      <p id={titleId} className="approval-inline-title">
        <strong>Approval needed:</strong> <code>{a.tool}</code> on <strong>{a.server}</strong>
      </p>
      {a.reason && (
        <p className="small">
          <MessageText text={a.reason} />
        </p>
      )}
      <p className="small muted">Arguments (as the bot wrote them):</p>
      <pre className="approval-args" data-testid="approval-args" tabIndex={0} aria-label={`Arguments of ${a.tool}`}>
        <code>{argumentsText(a.arguments)}</code>
      </pre>
      {a.expires_at !== null && <p className="small muted">Expires {relativeTime(a.expires_at, props.now)} if nobody answers (the tool does not run then).</p>}
      <div className="approval-actions">
        <button type="button" className="primary" onClick={() => void answer(true)} disabled={busy !== null}>
          {busy === 'approve' ? 'Approving…' : 'Approve'}
        </button>
        <button type="button" onClick={() => void answer(false)} disabled={busy !== null}>
          {busy === 'deny' ? 'Denying…' : 'Deny'}
        </button>
      </div>
      {error && (
        <p className="coral small" role="alert">
          <MessageText text={error} />
        </p>
      )}
    </div>
  );
}
