/**
 * The heartbeat's status for one bot: mode, state and next check, the interval (base and now),
 * today's pulses and resumes against the bot's and all bots' budgets, the last check's why, the
 * last verdict with its reason, pulse errors, the reason it switched itself off, and Check now.
 */
import { useState } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
import type { BotHeartbeat, HeartbeatSnapshot } from '../../../../src/protocol/heartbeat.js';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import { Dot } from '../../ui/Dot.js';
import { clockTime, count, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { MODE_TEXT, VERDICT_TEXT, forReader, lastVerdict, seconds, stateOf, whyOf, worldNote } from './heartbeat-why.js';

export function HeartbeatStatus(props: { bot: BotWithStatus; hb: BotHeartbeat; snapshot: HeartbeatSnapshot; onChanged: () => void }) {
  const { bot, hb, snapshot } = props;
  const { notify } = useShell();
  const now = useNow(15_000);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const world = worldNote(useShell().status.data?.instances.find((i) => i.world === 'heartbeat'));
  const off = world?.off === true;
  const state = stateOf(hb, now, snapshot.checkins.filter((c) => c.bot_id === bot.id).length, off);
  const verdict = lastVerdict(snapshot.log, bot.id) ?? (hb.last_verdict ? { verdict: hb.last_verdict, reason: hb.last_reason, at: hb.last_pulse_at } : null);
  const mode = MODE_TEXT[hb.mode];
  const last = snapshot.log.find((e) => e.bot_id === bot.id);
  const lastWhy = last ? whyOf(last, now) : null;
  const today = snapshot.today;
  const errorId = `hb-${bot.id}-now-error`;

  const checkNow = async () => {
    setBusy(true);
    setError(null);
    try {
      await call('bots.heartbeat_now', { bot_id: bot.id });
      notify(`Checking @${bot.name} now (its attempts and check-ins start over).`);
      props.onChanged();
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="hb-status" data-testid="heartbeat-status" data-state={hb.state} data-enabled={hb.enabled}>
      <p className="hb-state">
        <span className="status-line hb-state-line" data-testid="heartbeat-state">
          <Dot color={state.color} pulse={state.pulse} />
          <span>{state.text}</span>
        </span>
        <span className={`badge ${hb.mode === 'resume' ? '' : 'badge-waiting'} hb-mode`} title={mode.explain} data-testid="heartbeat-mode">
          mode: {mode.label}
        </span>
      </p>
      {world && (
        <p className={`small hb-world-note${world.off ? ' hb-world-off' : ''}`} data-testid="heartbeat-world-note" role="status">
          <MessageText text={world.text} />
        </p>
      )}
      {hb.mode !== 'resume' && (
        <p className="small hb-mode-note" data-testid="heartbeat-mode-note">
          Mode <strong>{mode.label}</strong>: the heartbeat {mode.explain}. Change it under “Settings for all bots”.
        </p>
      )}
      {hb.disabled_reason && !hb.enabled && (
        <p className="coral small" data-testid="heartbeat-disabled-reason">
          Off because <MessageText text={forReader(hb.disabled_reason, now)} />.
        </p>
      )}
      <dl className="hb-facts">
        <dt>Next check</dt>
        <dd data-testid="heartbeat-next">
          {off || !hb.enabled || hb.mode === 'off' ? (
            'none while it is off'
          ) : hb.next_heartbeat_at === null ? (
            'nothing unfinished — wakes when something changes'
          ) : hb.next_heartbeat_at <= now ? (
            'due now (at the next tick)'
          ) : (
            <span title={fullTime(hb.next_heartbeat_at)}>
              {relativeTime(hb.next_heartbeat_at, now)} ({clockTime(hb.next_heartbeat_at, now)})
            </span>
          )}
        </dd>
        <dt>Interval</dt>
        <dd data-testid="heartbeat-interval">
          every {seconds(hb.interval_seconds)}
          {hb.current_interval_seconds !== hb.interval_seconds && (
            <span className="muted">
              {' '}
              — now every {seconds(hb.current_interval_seconds)}: its pulses kept finding nothing to do (a resume or your message brings it back)
            </span>
          )}
        </dd>
        <dt>Today</dt>
        <dd data-testid="heartbeat-today">
          This bot: <Budget used={hb.pulses_today} max={hb.max_pulses_per_day} what="pulses" /> ·{' '}
          <Budget used={hb.resumes_today} max={hb.max_resumes_per_day} what="resumes" />
          <span className="muted small hb-global-today" data-testid="heartbeat-today-all">
            All bots together: <Budget used={today.pulses} max={today.max_pulses} what="pulses" /> ·{' '}
            <Budget used={today.resumes} max={today.max_resumes} what="resumes" />
          </span>
        </dd>
        {hb.cooldown_until !== null && hb.cooldown_until > now && (
          <>
            <dt>Cooldown</dt>
            <dd>until {clockTime(hb.cooldown_until, now)} (after a resume)</dd>
          </>
        )}
        {hb.consecutive_errors > 0 && hb.enabled && (
          <>
            <dt>Pulse errors</dt>
            <dd className="coral">{hb.consecutive_errors} in a row (at 3 the heartbeat switches itself off for this bot)</dd>
          </>
        )}
        <dt>Last check</dt>
        <dd data-testid="heartbeat-last">
          {last && lastWhy ? (
            <>
              <span className="hb-why-headline">{lastWhy.headline}</span>{' '}
              <time className="muted small" dateTime={new Date(last.last_at).toISOString()} title={fullTime(last.last_at)}>
                {relativeTime(last.last_at, now)}
              </time>
            </>
          ) : (
            <span className="muted">none yet</span>
          )}
        </dd>
        {verdict && (
          <>
            <dt>Last verdict</dt>
            <dd data-testid="heartbeat-verdict">
              {VERDICT_TEXT[verdict.verdict]}
              {verdict.reason ? <> — {forReader(verdict.reason, now)}</> : null}{' '}
              {verdict.at !== null && (
                <time className="muted small" dateTime={new Date(verdict.at).toISOString()} title={fullTime(verdict.at)}>
                  {relativeTime(verdict.at, now)}
                </time>
              )}
            </dd>
          </>
        )}
      </dl>
      <div className="hb-actions">
        <button
          type="button"
          onClick={() => void checkNow()}
          disabled={busy || off || !hb.enabled || hb.mode === 'off'}
          aria-describedby={error ? errorId : `hb-${bot.id}-now-help`}
          data-testid="heartbeat-check-now"
        >
          {busy ? 'Checking…' : 'Check now'}
        </button>
        <span id={`hb-${bot.id}-now-help`} className="muted small">
          {off
            ? 'Nothing is checked while the heartbeat does not run.'
            : hb.mode === 'off'
              ? 'The mode is off for all bots: nothing is checked. Set a mode under “Settings for all bots” to check.'
              : hb.enabled
                ? 'Looks at once, even in quiet hours; resets its attempts and check-ins.'
                : 'Switch the heartbeat on to check.'}
        </span>
      </div>
      {error && (
        <p id={errorId} className="coral small" role="alert" data-testid="heartbeat-check-now-error">
          <MessageText text={error} />
        </p>
      )}
    </div>
  );
}

function Budget(props: { used: number; max: number; what: string }) {
  if (props.max === 0) return <span>no {props.what} allowed (budget 0)</span>;
  const spent = props.used >= props.max;
  return (
    <span className={spent ? 'coral' : undefined}>
      {count(props.used)} of {count(props.max)} {props.what}
      {spent ? ' (spent until midnight)' : ''}
    </span>
  );
}
