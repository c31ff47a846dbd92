/**
 * A bot's panel beside its thread: what it is (label, description, model, tools), the
 * heartbeat's slot (issue 12 fills `HeartbeatSlot`), its routines, and edit / delete.
 */
import { useState } from 'react';
import type { BotWithStatus, ThreadSummary } from '../../../../src/protocol/bots.js';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { BotTools } from './BotTools.js';
import { HeartbeatSlot } from './HeartbeatSlot.js';
import { Routines } from './Routines.js';

export function BotPanel(props: { bot: BotWithStatus; thread: ThreadSummary; onEdit: () => void; onDeleted: () => void }) {
  const { bot } = props;
  const { notify } = useShell();
  const [confirming, setConfirming] = useState(false);
  const headingId = `bot-${bot.id}-heading`;

  const remove = async () => {
    try {
      await call('bots.delete', { bot_id: bot.id });
      notify(`Deleted @${bot.name}.`);
      props.onDeleted();
    } catch (err) {
      notify(`Could not delete @${bot.name}: ${explain(err)}`, 'error');
      setConfirming(false);
    }
  };

  return (
    <aside className="bot-panel" aria-labelledby={headingId} data-testid="bot-panel">
      <section className="card bot-facts">
        <header className="bot-facts-head">
          <h2 id={headingId}>About @{bot.name}</h2>
          <button type="button" onClick={props.onEdit}>
            Edit
          </button>
        </header>
        {bot.description ? <p className="bot-description">{bot.description}</p> : <p className="muted small">No description.</p>}
        <dl className="bot-facts-list">
          <dt>Model</dt>
          <dd>{bot.model ? `${bot.model} (${bot.model_role} endpoint)` : `the ${bot.model_role} model`}</dd>
          <dt>Tools</dt>
          <dd data-testid="bot-tools">
            <BotTools tools={bot.tools} />
          </dd>
          <dt>Persona</dt>
          <dd>{bot.persona ? <span className="bot-persona">{bot.persona}</span> : <span className="muted">default</span>}</dd>
        </dl>
        <div className="bot-delete">
          {confirming ? (
            <>
              <span className="small">Delete @{bot.name} with its thread, tasks and routines?</span>
              <button type="button" className="danger" onClick={() => void remove()}>
                Delete
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep
              </button>
            </>
          ) : (
            <button type="button" className="link small" onClick={() => setConfirming(true)}>
              Delete this bot…
            </button>
          )}
        </div>
      </section>
      {/* The heartbeat's section (seed 2 §11): see HeartbeatSlot.tsx. */}
      <HeartbeatSlot bot={bot} thread={props.thread} />
      <Routines bot={bot} />
    </aside>
  );
}
