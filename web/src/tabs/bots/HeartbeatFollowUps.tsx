/**
 * Follow-ups (seed 2 §8): promises the bot made with a `FOLLOWUP:` line ("10m — verify the deploy",
 * "when user replies — …") and reminders a person set ("check back in 30 minutes"). A due one
 * wakes the bot on it; a task that completes clears its own. A person adds one here.
 */
import { useId, useState, type FormEvent } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
import type { FollowUp } from '../../../../src/protocol/heartbeat.js';
import { call } from '../../api/rpc.js';
import { useNow } from '../../shell/hooks.js';
import { clockTime, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { fieldError } from './errors.js';

export function HeartbeatFollowUps(props: { bot: BotWithStatus; followups: FollowUp[]; onChanged: () => void }) {
  const now = useNow(30_000);
  const list = props.followups;
  return (
    <div className="hb-followups" data-testid="heartbeat-followups">
      <h3 className="hb-subhead">Follow-ups{list.length > 0 && <span className="count">{list.length}</span>}</h3>
      {list.length === 0 ? (
        <p className="muted small">No promises pending. When @{props.bot.name} says it will come back to something, it shows here.</p>
      ) : (
        <ul className="hb-followup-list">
          {list.map((f) => (
            <li key={f.id} className="small" data-testid="heartbeat-followup">
              <strong>{f.origin === 'person' ? 'Your reminder' : `@${props.bot.name} promised`}</strong>{' '}
              {f.due_at === null ? (
                'when you reply'
              ) : (
                <time dateTime={new Date(f.due_at).toISOString()} title={fullTime(f.due_at)}>
                  {f.due_at <= now ? `due since ${clockTime(f.due_at, now)}` : `${relativeTime(f.due_at, now)} (${clockTime(f.due_at, now)})`}
                </time>
              )}
              : <MessageText text={f.note} />
            </li>
          ))}
        </ul>
      )}
      <RemindMe bot={props.bot} onAdded={props.onChanged} />
    </div>
  );
}

type Field = 'in_minutes' | 'note';

function RemindMe(props: { bot: BotWithStatus; onAdded: () => void }) {
  const ids = useId();
  const [minutes, setMinutes] = useState('30');
  const [note, setNote] = useState('');
  const [error, setError] = useState<{ field: Field | null; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const n = Number(minutes);
    if (!minutes.trim() || !Number.isInteger(n) || n < 1) return setError({ field: 'in_minutes', text: 'Give a whole number of minutes, 1 or more.' });
    if (!note.trim()) return setError({ field: 'note', text: 'Say what the bot should check then.' });
    setBusy(true);
    setError(null);
    try {
      await call('bots.add_followup', { bot_id: props.bot.id, in_minutes: n, note: note.trim() });
      setNote('');
      props.onAdded();
    } catch (err) {
      const f = fieldError(err);
      setError({ field: f.field === 'in_minutes' || f.field === 'note' ? f.field : null, text: f.text });
    } finally {
      setBusy(false);
    }
  };
  const describedBy = (field: Field) => (error && (error.field === field || error.field === null) ? `${ids}-error` : undefined);

  return (
    <details className="hb-disclosure">
      <summary>Ask @{props.bot.name} to check back later</summary>
      <form className="hb-form hb-remind" onSubmit={(e) => void submit(e)} aria-label={`Remind @${props.bot.name} to check back`} noValidate>
        <div className="hb-field hb-field-short">
          <label htmlFor={`${ids}-minutes`}>In (minutes)</label>
          <input
            id={`${ids}-minutes`}
            type="number"
            inputMode="numeric"
            min={1}
            step={1}
            value={minutes}
            onChange={(e) => setMinutes(e.target.value)}
            aria-invalid={error?.field === 'in_minutes'}
            aria-describedby={describedBy('in_minutes')}
          />
        </div>
        <div className="hb-field">
          <label htmlFor={`${ids}-note`}>What to check</label>
          <input
            id={`${ids}-note`}
            type="text"
            maxLength={400}
            placeholder="Did the deploy land?"
            value={note}
            onChange={(e) => setNote(e.target.value)}
            aria-invalid={error?.field === 'note'}
            aria-describedby={describedBy('note')}
          />
        </div>
        <button type="submit" disabled={busy}>
          Add reminder
        </button>
        {error && (
          <p id={`${ids}-error`} className="coral small hb-form-error" role="alert" data-testid="heartbeat-remind-error" data-field={error.field ?? ''}>
            <MessageText text={error.text} />
          </p>
        )}
      </form>
    </details>
  );
}
