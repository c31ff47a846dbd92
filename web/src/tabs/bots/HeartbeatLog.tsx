/**
 * The heartbeat's log for one bot, newest first: each check with its time (and how often the same
 * skip repeated), the why in words (the rule that woke it or the skip that stopped it, the pulse's
 * verdict and reason), what was dispatched (shown in the thread), and its figures: tier, model,
 * time, tokens, error. Older entries page in with `bots.heartbeat_log {bot_id, before}`.
 */
import { useState } from 'react';
import type { BotWithStatus } from '../../../../src/protocol/bots.js';
import type { HeartbeatLogEntry } from '../../../../src/protocol/heartbeat.js';
import { call, explain } from '../../api/rpc.js';
import { useNow } from '../../shell/hooks.js';
import { Dot } from '../../ui/Dot.js';
import { clockTime, count, duration, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { whyOf } from './heartbeat-why.js';

/** Shown before "Show more": enough for the last few checks without crowding the panel. */
const FIRST = 5;
const PAGE = 20;
/** How many entries `bots.heartbeat_snapshot` holds (its newest). */
const SNAPSHOT_LOG = 20;
const TIER_TEXT = ['no model call', 'pulse', 'resume'] as const;

export function HeartbeatLog(props: { bot: BotWithStatus; entries: HeartbeatLogEntry[] }) {
  const { bot } = props;
  const now = useNow(30_000);
  const [expanded, setExpanded] = useState(false);
  const [older, setOlder] = useState<HeartbeatLogEntry[]>([]);
  /** The last older page was full: there may be more. */
  const [olderFull, setOlderFull] = useState(true);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);

  // The live entries win over a paged copy of the same one (its repeats may have grown).
  const live = props.entries.filter((e) => e.bot_id === bot.id);
  const ids = new Set(live.map((e) => e.id));
  const all = [...live, ...older.filter((e) => !ids.has(e.id))].sort((a, b) => b.last_at - a.last_at);
  const shown = expanded ? all : all.slice(0, FIRST);
  // The snapshot holds the newest SNAPSHOT_LOG entries: fewer means that is all there is.
  const hasOlder = older.length > 0 ? olderFull : live.length >= SNAPSHOT_LOG;

  const loadOlder = async () => {
    const oldest = all.at(-1);
    if (!oldest) return;
    setLoading(true);
    setError(null);
    try {
      const page = await call('bots.heartbeat_log', { bot_id: bot.id, before: oldest.last_at, limit: PAGE });
      setOlder((o) => [...o, ...page]);
      setOlderFull(page.length === PAGE);
    } catch (err) {
      setError(explain(err));
    } finally {
      setLoading(false);
    }
  };

  return (
    <div className="hb-log" data-testid="heartbeat-log">
      <h3 className="hb-subhead" id={`hb-log-${bot.id}`}>
        Checks and why
      </h3>
      {all.length === 0 ? (
        <p className="muted small" data-testid="heartbeat-log-empty">
          No checks yet. The heartbeat looks at @{bot.name} when it stops with work unfinished; until then nothing is sent to any model.
        </p>
      ) : (
        <ol className="hb-entries" aria-labelledby={`hb-log-${bot.id}`}>
          {shown.map((e) => (
            <LogItem key={e.id} entry={e} now={now} />
          ))}
        </ol>
      )}
      <div className="hb-log-more">
        {!expanded && all.length > FIRST && (
          <button type="button" className="link small" onClick={() => setExpanded(true)}>
            Show all {all.length} checks loaded
          </button>
        )}
        {expanded && hasOlder && (
          <button type="button" className="link small" onClick={() => void loadOlder()} disabled={loading}>
            {loading ? 'Loading…' : 'Show older checks'}
          </button>
        )}
        {expanded && !hasOlder && all.length > FIRST && (
          <span className="muted small">That is the whole log (the newest 200 entries of all bots are kept).</span>
        )}
      </div>
      {error && (
        <p className="coral small" role="alert">
          Older checks could not be read: <MessageText text={error} />
        </p>
      )}
    </div>
  );
}

function LogItem(props: { entry: HeartbeatLogEntry; now: number }) {
  const e = props.entry;
  const why = whyOf(e, props.now);
  const figures = [
    TIER_TEXT[e.tier],
    e.model,
    e.ms !== null ? duration(e.ms) : null,
    e.input_tokens + e.output_tokens > 0 ? `${count(e.input_tokens)} in / ${count(e.output_tokens)} out tokens` : null,
  ].filter((x): x is string => !!x);
  return (
    <li className="hb-entry" data-testid="heartbeat-entry" data-outcome={e.outcome} data-skip={e.skip ?? ''} data-rule={e.rule ?? ''}>
      <p className="hb-entry-head">
        <Dot color={why.tone} />
        <span className="hb-why-headline" data-testid="heartbeat-why">
          {why.headline}
        </span>
      </p>
      {why.detail && (
        <p className="small hb-entry-detail" data-testid="heartbeat-why-detail">
          <MessageText text={why.detail} />
        </p>
      )}
      {/* The rule's own name stays out of the words (issue 23); it is in a tooltip and an attribute for whoever reads the code. */}
      <p
        className="muted small hb-entry-meta"
        data-testid="heartbeat-meta"
        data-rule={e.skip ?? e.rule ?? undefined}
        title={(e.skip ?? e.rule) ? `Rule in the code: ${e.skip ?? e.rule}` : undefined}
      >
        <time dateTime={new Date(e.at).toISOString()} title={fullTime(e.at)}>
          {clockTime(e.at, props.now)}
        </time>
        {e.repeats > 1 && (
          <span data-testid="heartbeat-repeats">
            {' '}
            · {e.repeats} times, last {relativeTime(e.last_at, props.now)}
          </span>
        )}
        {figures.length > 0 && <> · {figures.join(' · ')}</>}
      </p>
      {e.error && (
        <p className="coral small hb-entry-error">
          Error: <MessageText text={e.error} />
        </p>
      )}
      {e.dispatched && <ShowInThread messageId={e.dispatched.message_id} />}
    </li>
  );
}

/**
 * What a resume dispatched, in the thread beside the panel: scrolled into view and focused. An
 * older message not loaded in the thread says so instead.
 */
function ShowInThread(props: { messageId: string }) {
  const [missing, setMissing] = useState(false);
  const show = () => {
    const el = document.querySelector<HTMLElement>(`[data-testid="message"][data-message-id="${CSS.escape(props.messageId)}"]`);
    if (!el) return setMissing(true);
    setMissing(false);
    el.tabIndex = -1;
    el.scrollIntoView({ block: 'center', behavior: 'smooth' });
    el.focus({ preventScroll: true });
  };
  return (
    <p className="small hb-entry-link">
      <button type="button" className="link" onClick={show} data-testid="heartbeat-show-dispatched">
        Show the resumed reply in the thread
      </button>
      {missing && <span className="muted"> — it is older than the messages loaded; use “Show earlier messages” in the thread.</span>}
    </p>
  );
}
