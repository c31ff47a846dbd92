/**
 * The Memory tab (issue 13 §6): the sources memory holds (document counts, last sync, Sync
 * now), a recall search, what changed since the memory world's last review, and that world's
 * notifications, the to-dos it proposes to delegate to a bot (Accept / Decline), its to-dos and goals. When memory is empty it says how to connect a source.
 * A document opened by its address (an actionable's link) shows on top (DocumentView).
 */
import { useState } from 'react';
import { METHOD_NOT_FOUND, RpcError, call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { Dot } from '../../ui/Dot.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Changes } from './Changes.js';
import { Delegations } from './Delegations.js';
import { DocumentView } from './DocumentView.js';
import { Goals, Notifications, Todos } from './Outputs.js';
import { Search } from './Search.js';
import { Sources } from './Sources.js';
import './memory.css';

const NAMESPACE_EVENTS = ['memory.changed', 'memory.synced'] as const;
const SOURCE_EVENTS = ['memory.synced', 'memory.sync_progress'] as const;
const DIFF_EVENTS = ['memory.changed', 'tick.finished'] as const;
const NOTIFICATION_EVENTS = ['memory.notification'] as const;
const TODO_EVENTS = ['memory.todos_changed'] as const;
const GOAL_EVENTS = ['memory.goals_changed'] as const;
const DELEGATION_EVENTS = ['memory.delegations_changed'] as const;

export function MemoryTab() {
  const { route, navigate } = useShell();
  const namespaces = useLiveRpc('memory.namespaces', {}, NAMESPACE_EVENTS);
  // A sync's progress arrives as `memory.sync_progress`; while a source syncs its row is also read
  // again every 2 s, so a page that missed an event (or a daemon of an older release) still moves.
  const sources = useLiveRpc('memory.sources', {}, SOURCE_EVENTS, (list) => list.some((s) => s.syncing), true);
  const diff = useLiveRpc('memory.diff', {}, DIFF_EVENTS);
  const notifications = useLiveRpc('memory.notifications_list', { limit: 50 }, NOTIFICATION_EVENTS);
  const todos = useLiveRpc('memory.todos_list', {}, TODO_EVENTS);
  const goals = useLiveRpc('memory.goals_list', {}, GOAL_EVENTS);
  const delegations = useLiveRpc('memory.delegations_list', {}, DELEGATION_EVENTS);

  if (namespaces.error instanceof RpcError && namespaces.error.rpcCode === METHOD_NOT_FOUND) {
    return (
      <p className="muted" data-testid="memory-unavailable">
        This daemon runs no memory module, so there is no memory to show.
      </p>
    );
  }
  return (
    <div className="memory-tab">
      <ReviewBar />
      <div className="columns memory-columns">
        <div className="column">
          <DocumentView route={route} labels={new Map((namespaces.data ?? []).map((n) => [n.namespace, n.label]))} onClose={() => navigate('memory')} />
          <Sources namespaces={namespaces} sources={sources} />
          <Search namespaces={namespaces.data} />
        </div>
        <div className="column">
          <Notifications notifications={notifications} />
          <Delegations delegations={delegations} />
          <Todos todos={todos} />
          <Goals goals={goals} />
          <Changes diff={diff} />
        </div>
      </div>
    </div>
  );
}

/** The memory world's state: its last review, the next one, and "Review now". */
function ReviewBar() {
  const { status, notify } = useShell();
  const now = useNow(15_000);
  const [busy, setBusy] = useState(false);
  const w = status.data?.instances.find((i) => i.world === 'memory');
  if (!w) return null;
  const state = w.running
    ? { label: 'Reviewing now', color: 'blue' as const, pulse: true }
    : !w.enabled
      ? { label: 'Reviews off', color: 'gray' as const }
      : w.consecutive_failures > 0
        ? { label: 'Last review failed', color: 'coral' as const }
        : { label: 'Watching', color: 'green' as const };
  const review = async () => {
    setBusy(true);
    try {
      await call('subconscious.trigger', { world: 'memory' });
      notify('The memory world is looking at what changed.', 'info');
    } catch (err) {
      notify(`Could not start a review: ${explain(err)}`, 'error');
    } finally {
      setBusy(false);
      void status.reload();
    }
  };
  return (
    <div className="statusbar" role="group" aria-label="Memory world" data-testid="memory-review-bar">
      <span className="state">
        <Dot color={state.color} pulse={state.pulse} /> {state.label}
      </span>
      <span title={fullTime(w.last_tick_at)}>
        last look <strong>{relativeTime(w.last_tick_at, now)}</strong>
      </span>
      {w.enabled && w.next_tick_at !== null && (
        <span title={fullTime(w.next_tick_at)}>
          next <strong>{relativeTime(w.next_tick_at, now)}</strong>
        </span>
      )}
      {w.last_summary && (
        <span className="statusbar-note">
          <MessageText text={w.last_summary} />
        </span>
      )}
      {w.consecutive_failures > 0 && w.last_error && (
        <span className="coral statusbar-note">
          <MessageText text={w.last_error} />
        </span>
      )}
      <button type="button" className="primary statusbar-run" onClick={() => void review()} disabled={busy || w.running || !w.enabled}>
        {busy ? 'Starting…' : 'Review now'}
      </button>
    </div>
  );
}
