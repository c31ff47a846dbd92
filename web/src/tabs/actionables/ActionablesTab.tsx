/**
 * The Actionables tab (issue 13 §6): the conscious loop's items grouped by priority (critical,
 * important, normal) with their source labels; Done and Dismiss apply at once (the card leaves
 * the list) with Undo, and done or dismissed items stay restorable below; the last run's time,
 * count and errors; Run now; and, when there is nothing, what feeds the list. Each card links to
 * the memory document it came from and to its own `conscious` document (opened on the Memory tab).
 */
import { useEffect, useRef, useState } from 'react';
import { METHOD_NOT_FOUND, RpcError, call, explain } from '../../api/rpc.js';
import type { Actionable, ActionablePriority, MemoryNamespace } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { count, fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';
import { ConnectSource } from '../memory/ConnectSource.js';
import { documentRoute } from '../memory/DocumentView.js';
import { optimistic } from '../subconscious/optimistic.js';
import { confirmActionable } from './confirm.js';
import { RunBar } from './RunBar.js';
import './actionables.css';

const ITEM_EVENTS = ['conscious.actionables_changed', 'conscious.completed'] as const;
const RUN_EVENTS = ['conscious.started', 'conscious.completed', 'conscious.error', 'tick.finished'] as const;
const SOURCE_EVENTS = ['memory.changed', 'memory.synced'] as const;

/** The seed's priorities, most urgent first, with what each means (its rules). */
const GROUPS: ReadonlyArray<{ priority: ActionablePriority; title: string; hint: string }> = [
  { priority: 'critical', title: 'Critical', hint: 'urgent: expiring today, a security issue' },
  { priority: 'important', title: 'Important', hint: 'needs attention within a day or two' },
  { priority: 'normal', title: 'Normal', hint: 'worth knowing' },
];

type Settled = 'done' | 'dismissed';
interface Undo {
  item: Actionable;
  state: Settled;
}

export function ActionablesTab() {
  const { status, notify, navigate } = useShell();
  const items = useLiveRpc('conscious.list', {}, ITEM_EVENTS);
  const running = (status.data?.instances ?? []).some((i) => i.world === 'conscious' && i.running);
  const runs = useLiveRpc('conscious.runs', { limit: 5 }, RUN_EVENTS, () => running);
  const namespaces = useLiveRpc('memory.namespaces', {}, SOURCE_EVENTS);
  const world = status.data?.instances.find((i) => i.world === 'conscious');
  const [undo, setUndo] = useState<Undo | null>(null);
  const undoButton = useRef<HTMLButtonElement>(null);
  const focusUndo = useRef(false);

  useEffect(() => {
    // The card the person acted on is gone: keyboard focus goes to Undo rather than the page top.
    if (undo && focusUndo.current) undoButton.current?.focus();
    focusUndo.current = false;
  }, [undo]);

  if (items.error instanceof RpcError && items.error.rpcCode === METHOD_NOT_FOUND) {
    return (
      <p className="muted" data-testid="actionables-unavailable">
        This daemon runs no conscious loop, so there are no actionables.
      </p>
    );
  }

  const setState = async (item: Actionable, state: Settled | 'new') => {
    const method = state === 'done' ? 'conscious.complete' : state === 'dismissed' ? 'conscious.dismiss' : 'conscious.reopen';
    const failure = state === 'new' ? `Could not restore “${item.title}”` : `Could not ${state === 'done' ? 'mark done' : 'dismiss'} “${item.title}”`;
    const ok = await optimistic(
      items,
      (d) => d.map((x) => (x.id === item.id ? { ...x, state } : x)),
      () => call(method, { id: item.id }),
      failure,
      notify,
    );
    if (!ok) return;
    if (state === 'new') {
      // Undo removes the bar the keyboard was on: it goes to the restored card instead.
      if (undo?.item.id === item.id && document.activeElement === undoButton.current) {
        document.querySelector<HTMLButtonElement>(`[data-testid="actionable"][data-id="${item.id}"] .actionable-actions button`)?.focus();
      }
      setUndo(null);
    } else {
      focusUndo.current = true;
      setUndo({ item, state });
    }
  };

  const confirm = async (item: Actionable) => {
    try {
      notify(await confirmActionable(item), 'info');
      focusUndo.current = true;
      setUndo({ item, state: 'done' });
      void items.reload();
    } catch (err) {
      notify(`Could not confirm “${item.title}”: ${explain(err)}`, 'error');
    }
  };

  const all = items.data ?? [];
  const fresh = all.filter((a) => a.state === 'new');
  const settled = all.filter((a) => a.state !== 'new');
  return (
    <div className="actionables">
      <RunBar runs={runs.data} world={world} />
      {undo && (
        <div className="undo-bar" role="status" data-testid="undo-bar">
          <span>
            {undo.state === 'done' ? 'Marked done' : 'Dismissed'}: “{undo.item.title}”.
          </span>
          <button ref={undoButton} type="button" onClick={() => void setState(undo.item, 'new')}>
            Undo
          </button>
          <button type="button" className="link" onClick={() => setUndo(null)} aria-label="Close this message">
            Close
          </button>
        </div>
      )}
      {!items.data && <p className="muted">{items.error ? 'The actionables could not be read.' : 'Loading actionables…'}</p>}
      {items.data && fresh.length === 0 && (
        <EmptyState namespaces={namespaces} read={(runs.data ?? []).some((r) => r.status === 'completed')} onMemory={() => navigate('memory')} />
      )}
      {/* The priorities side by side where the screen is wide, one under the other on a phone (issue 23). */}
      <div className="actionable-groups" data-testid="actionable-groups">
        {GROUPS.map((g) => {
          const group = fresh.filter((a) => a.priority === g.priority);
          if (group.length === 0) return null;
          return (
            <Section key={g.priority} id={`actionables-${g.priority}`} title={g.title} count={group.length}>
              <p className="muted small group-hint">{g.hint}</p>
              <ul className="actionable-list">
                {group.map((a) => (
                  <ActionableCard
                    key={a.id}
                    item={a}
                    onDone={() => void setState(a, 'done')}
                    onDismiss={() => void setState(a, 'dismissed')}
                    onConfirm={() => void confirm(a)}
                    onOpen={(namespace, externalId) => navigate('memory', documentRoute(namespace, externalId))}
                  />
                ))}
              </ul>
            </Section>
          );
        })}
      </div>
      {settled.length > 0 && (
        <details className="settled-actionables" data-testid="settled-actionables">
          <summary>Done and dismissed ({settled.length})</summary>
          <p className="muted small">These stay as you left them when the loop finds them again. Restore one to bring it back.</p>
          <ul className="settled-list">
            {settled.map((a) => (
              <li key={a.id} data-testid="settled-actionable" data-id={a.id} data-state={a.state}>
                <span className="settled-title">{a.title}</span>
                <span className="badge badge-quiet">{a.state}</span>
                <button type="button" className="link" onClick={() => void setState(a, 'new')} aria-label={`Restore: ${a.title}`}>
                  Restore
                </button>
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}

function ActionableCard(props: {
  item: Actionable;
  onDone: () => void;
  onDismiss: () => void;
  onConfirm: () => void;
  onOpen: (namespace: string, externalId: string) => void;
}) {
  const { offlineReason } = useShell();
  const now = useNow(60_000);
  const a = props.item;
  const titleId = `actionable-${a.id.slice(0, 16)}-title`;
  const flags = [a.requires_confirmation ? 'needs your confirmation' : null, a.has_complex_action ? 'several steps' : null].filter(Boolean);
  return (
    <li className="card actionable" aria-labelledby={titleId} data-testid="actionable" data-id={a.id} data-priority={a.priority}>
      <header className="actionable-head">
        <h3 id={titleId}>{a.title}</h3>
        <span className="badge badge-quiet actionable-source" data-testid="source-label" title={`Source: ${a.source}`}>
          {a.source_label}
        </span>
      </header>
      {a.description && <p className="actionable-description">{a.description}</p>}
      <p className="muted small actionable-meta">
        {flags.length > 0 && <span className="actionable-flags">{flags.join(' · ')} · </span>}
        seen <time title={fullTime(a.last_seen_at)}>{relativeTime(a.last_seen_at, now)}</time>
      </p>
      <p className="small actionable-links" data-testid="actionable-links">
        {a.source_document && (
          <>
            From{' '}
            <button
              type="button"
              className="link"
              data-testid="source-document-link"
              onClick={() => props.onOpen(a.source_document!.namespace, a.source_document!.external_id)}
              aria-label={`Open the document “${a.title}” came from: ${a.source_document.title}`}
            >
              {a.source_document.title || a.source_document.external_id}
            </button>
            {' · '}
          </>
        )}
        <button
          type="button"
          className="link"
          data-testid="memory-document-link"
          onClick={() => props.onOpen(a.memory.namespace, a.memory.external_id)}
          aria-label={`Open “${a.title}” in memory`}
        >
          In memory
        </button>
      </p>
      <div className="actionable-actions">
        {a.requires_confirmation && (
          <button
            type="button"
            className="primary"
            onClick={props.onConfirm}
            disabled={offlineReason !== null}
            title={offlineReason ?? 'The agent takes it on as a one-off task; whatever it would send or change asks you first, under Needs you'}
            aria-label={`Confirm: ${a.title}`}
            data-testid="actionable-confirm"
          >
            Confirm
          </button>
        )}
        <button type="button" className={a.requires_confirmation ? undefined : 'primary'} onClick={props.onDone} aria-label={`Done: ${a.title}`}>
          Done
        </button>
        <button type="button" onClick={props.onDismiss} aria-label={`Dismiss: ${a.title}`}>
          Dismiss
        </button>
      </div>
    </li>
  );
}

/** Nothing to act on: say what feeds the list, and how to connect a source when none is. */
function EmptyState(props: { namespaces: Resource<MemoryNamespace[]>; read: boolean; onMemory: () => void }) {
  const filled = (props.namespaces.data ?? []).filter((n) => n.documents > 0);
  if (filled.length === 0) {
    return (
      <div className="actionables-empty" data-testid="actionables-empty" data-sources="0">
        <p>
          <strong>Nothing to act on yet.</strong> The conscious loop reads your connected memory sources (mail exports, notes, chats) and turns what needs you
          into items here, most urgent first. No source holds anything yet.
        </p>
        <ConnectSource compact />
        <p>
          <button type="button" className="link" onClick={props.onMemory}>
            Open the Memory tab
          </button>{' '}
          to see your sources, or to push documents from your own app.
        </p>
      </div>
    );
  }
  return (
    <div className="actionables-empty" data-testid="actionables-empty" data-sources={filled.length} data-read={props.read}>
      <p>
        {props.read ? <strong>Nothing needs your attention.</strong> : <strong>No run has read your memory yet, so nothing is known here yet.</strong>} The
        conscious loop reads{' '}
        {filled.map((n, i) => (
          <span key={n.namespace}>
            {i > 0 && (i === filled.length - 1 ? ' and ' : ', ')}
            {n.label} ({count(n.documents)} document{n.documents === 1 ? '' : 's'})
          </span>
        ))}
        , and looks again whenever they change.
      </p>
      <p>
        <button type="button" className="link" onClick={props.onMemory}>
          Open the Memory tab
        </button>{' '}
        to search them or connect another source.
      </p>
    </div>
  );
}
