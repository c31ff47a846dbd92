/**
 * To-dos the memory world proposes to hand to a bot (its `delegate` tool). Nothing is sent until
 * the person presses Accept: then the bot gets it as a new task in its direct thread (Bots tab).
 * Decline sends nothing. Answered ones fold away with their outcome.
 */
import { call, explain } from '../../api/rpc.js';
import type { MemoryDelegation } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import type { Resource } from '../../shell/resource.js';
import { Section } from '../../ui/Section.js';

export function Delegations(props: { delegations: Resource<MemoryDelegation[]> }) {
  const { notify } = useShell();
  const list = props.delegations.data;
  if (!list || list.length === 0) return null;
  const pending = list.filter((d) => d.status === 'pending');
  const answered = list.filter((d) => d.status !== 'pending');
  const answer = async (d: MemoryDelegation, accept: boolean) => {
    try {
      const done = await call(accept ? 'memory.delegation_accept' : 'memory.delegation_decline', { id: d.id });
      if (done.status === 'failed') notify(`@${d.bot_name} could not take “${d.todo_title}”: ${done.error ?? 'unknown reason'}`, 'error');
      else notify(accept ? `“${d.todo_title}” is now a task of @${d.bot_name}.` : `Declined: “${d.todo_title}” stays with you.`, 'info');
    } catch (err) {
      notify(`Could not answer “${d.todo_title}”: ${explain(err)}`, 'error');
    } finally {
      void props.delegations.reload();
    }
  };
  return (
    <Section id="memory-delegations" title="Delegate to a bot?" count={pending.length}>
      {pending.length === 0 && <p className="muted">Nothing waiting for you.</p>}
      <ul className="output-list">
        {pending.map((d) => (
          <li key={d.id} className="output-row" data-testid="memory-delegation" data-status={d.status}>
            <div className="output-text">
              <span>
                {d.todo_title} → <strong>@{d.bot_name}</strong>
              </span>
              <span className="muted small">{d.instruction}</span>
            </div>
            <span className="output-actions">
              <button type="button" onClick={() => void answer(d, true)} aria-label={`Accept: ${d.todo_title} for @${d.bot_name}`}>
                Accept
              </button>
              <button type="button" className="link" onClick={() => void answer(d, false)} aria-label={`Decline: ${d.todo_title}`}>
                Decline
              </button>
            </span>
          </li>
        ))}
      </ul>
      {answered.length > 0 && (
        <details className="settled">
          <summary>Answered ({answered.length})</summary>
          <ul className="output-list">
            {answered.map((d) => (
              <li key={d.id} className="output-row output-settled" data-testid="memory-delegation" data-status={d.status}>
                <div className="output-text">
                  <span>
                    {d.todo_title} → @{d.bot_name}
                  </span>
                  <span className="muted small">
                    {d.status === 'accepted' ? 'accepted: a task of the bot (Bots tab)' : d.status === 'failed' ? `failed: ${d.error ?? ''}` : 'declined'}
                  </span>
                </div>
              </li>
            ))}
          </ul>
        </details>
      )}
    </Section>
  );
}
