/**
 * Seed 1's Approval Needed: amber cards for pending escalations. "Go ahead" approves and runs
 * it; skill-related ones get "Fix in Skills" instead (to the Skills view); "Skip" dismisses.
 */
import { call } from '../../api/rpc.js';
import type { Escalation, LogEntry } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import type { Resource } from '../../shell/resource.js';
import { Section } from '../../ui/Section.js';
import { optimistic } from './optimistic.js';

export function Approvals(props: { escalations: Resource<Escalation[]>; log: Resource<LogEntry[]> }) {
  const pending = (props.escalations.data ?? []).filter((e) => e.status === 'pending');
  if (pending.length === 0) return null;
  return (
    <Section id="approvals" title="Approval Needed" count={pending.length}>
      <ul className="approval-list">
        {pending.map((e) => (
          <ApprovalCard key={e.id} escalation={e} escalations={props.escalations} log={props.log} />
        ))}
      </ul>
    </Section>
  );
}

function ApprovalCard(props: { escalation: Escalation; escalations: Resource<Escalation[]>; log: Resource<LogEntry[]> }) {
  const { notify, navigate } = useShell();
  const e = props.escalation;
  const titleId = `esc-${e.id}-title`;
  const resolve = async (kind: 'approve' | 'dismiss') => {
    const ok = await optimistic(
      props.escalations,
      (d) => d.filter((x) => x.id !== e.id),
      () => call(`subconscious.escalations_${kind}`, { id: e.id }),
      kind === 'approve' ? `Could not approve “${e.title}”` : `Could not skip “${e.title}”`,
      notify,
    );
    if (ok) notify(kind === 'approve' ? `Approved: “${e.title}”. The result shows in the Activity Log.` : `Skipped: “${e.title}”.`, 'info');
    void props.log.reload();
  };
  return (
    <li className="card approval-card" aria-labelledby={titleId} data-testid="approval-card" data-escalation-id={e.id}>
      <header className="approval-head">
        <h3 id={titleId}>{e.title}</h3>
        <span className={`badge priority priority-${e.priority}`} data-testid="priority">
          {e.priority}
        </span>
      </header>
      <p className="approval-description">{e.description}</p>
      {e.analysis && e.analysis.trim() && e.analysis.trim() !== e.description.trim() && (
        <details className="approval-analysis">
          <summary>Why the agent asks</summary>
          <p>{e.analysis.trim()}</p>
        </details>
      )}
      <div className="approval-actions">
        {e.skill_related ? (
          <button type="button" className="primary" onClick={() => navigate('skills')}>
            Fix in Skills
          </button>
        ) : (
          <button type="button" className="primary" onClick={() => void resolve('approve')}>
            Go ahead
          </button>
        )}
        <button type="button" onClick={() => void resolve('dismiss')}>
          Skip
        </button>
      </div>
    </li>
  );
}
