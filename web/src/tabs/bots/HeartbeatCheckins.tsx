/**
 * Check-ins (seed 2 §6.5): the heartbeat found the bot blocked on its person and asked, once, in
 * the thread. Each waits here as a card with its question until it is resolved: a reply in the
 * thread answers it by itself; Dismiss leaves the work as it is; Retry starts its attempts over
 * and checks again. A resolved card goes (on `heartbeat.checkin_changed`).
 */
import { useState } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
import type { Checkin, CheckinSource, HeartbeatLogEntry } from '../../../../src/protocol/heartbeat.js';
import { call, explain } from '../../api/rpc.js';
import { useNow } from '../../shell/hooks.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';

const SOURCE_TEXT: Record<CheckinSource, string> = {
  ask_user: 'the pulse found it blocked on you',
  exhausted: 'it used all its attempts',
  blocked: 'the bot said it is blocked',
  interrupted_message: 'a reply was cut off',
  approval_expired: 'an approval it needed expired while nobody was there',
};

export function HeartbeatCheckins(props: { bot: BotWithStatus; checkins: Checkin[]; log: HeartbeatLogEntry[]; onChanged: () => void }) {
  const now = useNow(30_000);
  if (props.checkins.length === 0) return null;
  // The log names each task by title; a check-in names it by id.
  const titles = new Map(props.log.flatMap((e) => (e.task_id && e.task_title ? [[e.task_id, e.task_title] as const] : [])));
  return (
    <div className="hb-checkins" data-testid="heartbeat-checkins">
      <h3 className="hb-subhead">
        Needs you <span className="count">{props.checkins.length}</span>
      </h3>
      <ul className="hb-checkin-list">
        {props.checkins.map((c) => (
          <li key={c.id}>
            <CheckinCard checkin={c} title={c.task_id ? (titles.get(c.task_id) ?? null) : null} now={now} onChanged={props.onChanged} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function CheckinCard(props: { checkin: Checkin; title: string | null; now: number; onChanged: () => void }) {
  const c = props.checkin;
  const [busy, setBusy] = useState<'dismissed' | 'retry' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const headingId = `checkin-${c.id}-question`;
  const about = props.title ? `“${props.title}”` : 'this check-in';

  const resolve = async (resolution: 'dismissed' | 'retry') => {
    setBusy(resolution);
    setError(null);
    try {
      await call('bots.resolve_checkin', { id: c.id, resolution, via: 'page' });
      // A panel action is the person's activity in the thread (seed 2 §4); saying so also has the
      // Bots tab's list, which counts check-ins in its needs-attention badges, read them again.
      void call('bots.mark_user_active', { thread_id: c.thread_id }).catch(() => undefined);
      props.onChanged();
    } catch (err) {
      setError(explain(err));
      setBusy(null);
    }
  };

  return (
    <article className="hb-checkin" aria-labelledby={headingId} data-testid="heartbeat-checkin" data-checkin-id={c.id} data-source={c.source}>
      <p id={headingId} className="hb-checkin-question">
        <MessageText text={c.question} />
      </p>
      <p className="small hb-checkin-meta">
        Asked{' '}
        <time dateTime={new Date(c.created_at).toISOString()} title={fullTime(c.created_at)}>
          {relativeTime(c.created_at, props.now)}
        </time>{' '}
        because {SOURCE_TEXT[c.source]}
        {props.title ? <> · about “{props.title}”</> : null}. Reply in the thread to answer it.
      </p>
      <div className="hb-checkin-actions">
        <button
          type="button"
          onClick={() => void resolve('retry')}
          disabled={busy !== null}
          aria-label={`Retry ${about}: start its attempts over and check again`}
        >
          {busy === 'retry' ? 'Retrying…' : 'Retry'}
        </button>
        <button type="button" onClick={() => void resolve('dismissed')} disabled={busy !== null} aria-label={`Dismiss ${about}: leave the work as it is`}>
          {busy === 'dismissed' ? 'Dismissing…' : 'Dismiss'}
        </button>
      </div>
      {error && (
        <p className="coral small" role="alert">
          <MessageText text={error} />
        </p>
      )}
    </article>
  );
}
