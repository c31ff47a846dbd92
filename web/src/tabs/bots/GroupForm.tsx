/** A group thread: a name and two bots or more, who answer when @mentioned there. */
import { useId, useState, type FormEvent } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
import { call } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { MessageText } from '../../ui/MessageText.js';
import { fieldError, type FieldError } from './errors.js';

export function GroupForm(props: { bots: BotWithStatus[]; onDone: (threadId: string | null) => void }) {
  const ids = useId();
  const { notify } = useShell();
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [error, setError] = useState<FieldError | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return setError({ field: 'name', text: 'Give the group a name.' });
    if (chosen.length < 2) return setError({ field: 'bot_ids', text: 'Choose at least two bots (talk to one bot in its own thread).' });
    setBusy(true);
    setError(null);
    try {
      const thread = await call('bots.create_group', { name: name.trim(), bot_ids: chosen });
      notify(`Created the group “${thread.name}”.`);
      props.onDone(thread.id);
    } catch (err) {
      const f = fieldError(err);
      setError(f.field === 'name' || f.field === 'bot_ids' ? f : { field: null, text: f.text });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card bot-form" onSubmit={(e) => void submit(e)} aria-labelledby={`${ids}-title`} noValidate data-testid="group-form">
      <h2 id={`${ids}-title`} tabIndex={-1} data-bots-focus>
        New group
      </h2>
      <p className="muted small">In a group you write to several bots at once; @name says who answers, and a bot can hand work to another.</p>
      <div className="form-row">
        <label htmlFor={`${ids}-name`}>Name</label>
        <div className="form-control">
          <input
            id={`${ids}-name`}
            type="text"
            value={name}
            maxLength={80}
            placeholder="Launch crew"
            onChange={(e) => setName(e.target.value)}
            aria-invalid={error?.field === 'name'}
            aria-describedby={error?.field === 'name' ? `${ids}-error` : undefined}
          />
        </div>
      </div>
      <fieldset className="bot-tools" aria-invalid={error?.field === 'bot_ids'} aria-describedby={error?.field === 'bot_ids' ? `${ids}-error` : undefined}>
        <legend>Members</legend>
        {props.bots.map((b) => (
          <label key={b.id} className="checkbox">
            <input
              type="checkbox"
              checked={chosen.includes(b.id)}
              onChange={(e) => setChosen((cur) => (e.target.checked ? [...cur, b.id] : cur.filter((x) => x !== b.id)))}
            />
            {b.label} <span className="muted">@{b.name}</span>
          </label>
        ))}
      </fieldset>
      {error && (
        <p id={`${ids}-error`} className="coral small" role="alert" data-testid="group-form-error" data-field={error.field ?? ''}>
          <MessageText text={error.text} />
        </p>
      )}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy}>
          Create group
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
