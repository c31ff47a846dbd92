/**
 * Seed 1's Approval Needed: amber cards for pending escalations. "Go ahead" approves and runs
 * it (its log row then reads "Running the approved action…"); skill-related ones get "Fix in
 * Skills" instead, which opens Skills on the failing server (the card resolves by itself once
 * that server is healthy again); "Skip" dismisses. With nothing waiting it says so.
 */
import { call } from '../../api/rpc.js';
import type { Escalation } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import type { Resource } from '../../shell/resource.js';
import { Section } from '../../ui/Section.js';
import { optimistic } from './optimistic.js';

export function Approvals(props: { escalations: Resource<Escalation[]>; reloadLog: () => Promise<void> }) {
  const pending = (props.escalations.data ?? []).filter((e) => e.status === 'pending');
  return (
    <Section id="approvals" title="Approval Needed" count={props.escalations.data ? pending.length : undefined}>
      {props.escalations.data && pending.length === 0 && (
        <p className="muted empty-state" data-testid="approvals-empty">
          Nothing is waiting for you. When a task would send or change something you did not ask for, it stops and asks here first.
        </p>
      )}
      {!props.escalations.data && <p className="muted">{props.escalations.error ? 'The approval cards could not be read.' : 'Loading…'}</p>}
      <ul className="approval-list">
        {pending.map((e) => (
          <ApprovalCard key={e.id} escalation={e} escalations={props.escalations} reloadLog={props.reloadLog} />
        ))}
      </ul>
    </Section>
  );
}

function ApprovalCard(props: { escalation: Escalation; escalations: Resource<Escalation[]>; reloadLog: () => Promise<void> }) {
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
    if (ok) notify(kind === 'approve' ? `Approved: “${e.title}”. Running it now; the result shows in the Activity Log.` : `Skipped: “${e.title}”.`, 'info');
    void props.reloadLog();
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
      {e.skill_related && e.skill_server && (
        <p className="small" data-testid="approval-skill">
          It is about the skill “{e.skill_server}”: once that skill is healthy again, this card resolves by itself.
        </p>
      )}
      {e.analysis && e.analysis.trim() && e.analysis.trim() !== e.description.trim() && (
        <details className="approval-analysis">
          <summary>Why the agent asks</summary>
          <p>{e.analysis.trim()}</p>
        </details>
      )}
      <div className="approval-actions">
        {e.skill_related ? (
          <button
            type="button"
            className="primary"
            onClick={() => navigate('skills', e.skill_server ?? undefined)}
            title={e.skill_server ? `Open Skills on “${e.skill_server}”; this card resolves by itself once it is healthy again` : 'Open Skills'}
          >
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
