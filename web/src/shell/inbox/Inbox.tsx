/**
 * "Needs you", at the top of every tab (issue 23): one list across worlds, filterable by world
 * and priority; ArrowUp/ArrowDown (or j/k) move between cards, Home/End jump; a polite live
 * region says when something new arrives. Collapsible, so it never pushes a tab's own work far
 * down once the person has seen it.
 */
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useShell } from '../context.js';
import { useNow } from '../hooks.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { answeredWords, type AnsweredItem } from './answered.js';
import { DecisionCard, itemTitle } from './DecisionCard.js';
import { PRIORITIES, worldLabel, type InboxItem, type InboxPriority } from './items.js';
import './inbox.css';

export function Inbox(props: { items: InboxItem[]; answered?: AnsweredItem[]; ready: boolean; disabledReason: string | null; reload: () => void }) {
  const { notify, navigate } = useShell();
  const now = useNow(30_000);
  const [world, setWorld] = useState<string>('all');
  const [priority, setPriority] = useState<InboxPriority | 'all'>('all');
  const [open, setOpen] = useState(true);
  const [announce, setAnnounce] = useState('');
  const listRef = useRef<HTMLUListElement>(null);
  const seen = useRef<Set<string> | null>(null);

  // Say what arrived (not what was there at load).
  useEffect(() => {
    if (!props.ready) return;
    const keys = new Set(props.items.map((i) => i.key));
    if (seen.current) {
      const fresh = props.items.filter((i) => !seen.current!.has(i.key));
      if (fresh.length === 1) setAnnounce(`New in Needs you: ${itemTitle(fresh[0]!)} (${worldLabel(fresh[0]!.world)}).`);
      else if (fresh.length > 1) setAnnounce(`${fresh.length} new items in Needs you.`);
    }
    seen.current = keys;
  }, [props.items, props.ready]);

  const worlds = [...new Set(props.items.map((i) => i.world))].sort();
  const shown = props.items.filter((i) => (world === 'all' || i.world === world) && (priority === 'all' || i.priority === priority));

  const onKey = (e: KeyboardEvent<HTMLUListElement>) => {
    const target = e.target as HTMLElement;
    // Typing in an edit or reply box keeps its keys.
    if (target.closest('input, textarea, select')) return;
    const cards = [...(listRef.current?.querySelectorAll<HTMLElement>(':scope > li') ?? [])];
    const i = cards.findIndex((c) => c.contains(document.activeElement));
    const next =
      e.key === 'ArrowDown' || e.key === 'j'
        ? Math.min(cards.length - 1, i + 1)
        : e.key === 'ArrowUp' || e.key === 'k'
          ? Math.max(0, i - 1)
          : e.key === 'Home'
            ? 0
            : e.key === 'End'
              ? cards.length - 1
              : -1;
    if (next < 0 || !cards[next]) return;
    e.preventDefault();
    cards[next].focus();
  };

  return (
    <section className="inbox section" aria-labelledby="inbox-heading" data-testid="inbox">
      <header className="section-header inbox-header">
        <h2 id="inbox-heading">
          Needs you{' '}
          <span className="count" data-testid="inbox-count">
            {props.ready ? props.items.length : '…'}
          </span>
        </h2>
        <div className="inbox-filters">
          <label>
            World{' '}
            <select value={world} onChange={(e) => setWorld(e.target.value)} data-testid="inbox-filter-world">
              <option value="all">All worlds</option>
              {worlds.map((w) => (
                <option key={w} value={w}>
                  {worldLabel(w)}
                </option>
              ))}
            </select>
          </label>
          <label>
            Priority{' '}
            <select value={priority} onChange={(e) => setPriority(e.target.value as InboxPriority | 'all')} data-testid="inbox-filter-priority">
              <option value="all">Any priority</option>
              {PRIORITIES.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <button type="button" aria-expanded={open} aria-controls="inbox-list" onClick={() => setOpen((o) => !o)}>
            {open ? 'Hide' : 'Show'}
          </button>
        </div>
      </header>
      <p className="visually-hidden" aria-live="polite" data-testid="inbox-live">
        {announce}
      </p>
      {open && (
        <>
          {props.ready && props.items.length === 0 && (
            <p className="muted small" data-testid="inbox-empty">
              Nothing waits for you. Approvals, check-ins and confirmations from every world appear here first.
            </p>
          )}
          {props.items.length > 0 && shown.length === 0 && <p className="muted small">Nothing matches these filters.</p>}
          <ul id="inbox-list" ref={listRef} className="inbox-list" aria-label="Things that need you (arrow keys move between them)" onKeyDown={onKey}>
            {shown.map((item) => (
              <li key={item.key} tabIndex={-1} className="inbox-item">
                <DecisionCard
                  item={item}
                  now={now}
                  disabledReason={props.disabledReason}
                  open={(tab, detail) => navigate(tab, detail)}
                  onAnswered={(text) => {
                    if (text) notify(text, 'info');
                    props.reload();
                  }}
                />
              </li>
            ))}
          </ul>
          {props.answered && props.answered.length > 0 && <Answered items={props.answered} now={now} />}
        </>
      )}
    </section>
  );
}

/** What a person answered lately, and how: on the page, over RPC, from the CLI, over MCP, in the thread. */
function Answered(props: { items: AnsweredItem[]; now: number }) {
  return (
    <details className="inbox-answered" data-testid="inbox-answered">
      <summary>
        Answered lately <span className="count">{props.items.length}</span>
      </summary>
      <ul className="inbox-answered-list">
        {props.items.map((a) => (
          <li key={a.key} className="small" data-testid="inbox-answered-item" data-kind={a.kind} data-via={a.via ?? ''} data-by={a.by ?? ''}>
            <span className="inbox-answered-what">
              {a.kind === 'checkin' ? `${a.bot ?? 'A bot'} asked: ` : ''}
              {a.what}
            </span>{' '}
            — <strong data-testid="inbox-answered-how">{answeredWords(a)}</strong>{' '}
            <time className="muted" dateTime={new Date(a.at).toISOString()} title={fullTime(a.at)}>
              {relativeTime(a.at, props.now)}
            </time>
          </li>
        ))}
      </ul>
    </details>
  );
}
