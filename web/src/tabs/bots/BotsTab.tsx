/**
 * The Bots tab (issue 11 §8): the bots and groups on the left with their status and what needs
 * the person; on the right the chosen thread (messages streaming in, task chips, approvals
 * inline, a composer with @mention completion in groups) beside the bot's panel (its facts,
 * the heartbeat's slot, its routines), or the form to create or edit a bot or a group.
 * On a phone the list and the chosen view take turns, with a way back.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { BotWithStatus, Snapshot, ThreadSummary } from '../../../../src/protocol/bots.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { MessageText } from '../../ui/MessageText.js';
import { call, explain } from '../../api/rpc.js';
import { BotForm } from './BotForm.js';
import { BotList } from './BotList.js';
import { BotPanel } from './BotPanel.js';
import { GroupForm } from './GroupForm.js';
import { ThreadView } from './ThreadView.js';
import { useExternalBots } from './ExternalBots.js';
import './bots.css';

export type BotsView =
  { kind: 'none' } | { kind: 'thread'; threadId: string } | { kind: 'new-bot' } | { kind: 'edit-bot'; botId: string } | { kind: 'new-group' };

const SNAPSHOT_EVENTS = [
  'bots.bot_changed',
  'bots.status_changed',
  'bots.thread_changed',
  'bots.message_changed',
  'bots.task_changed',
  'bots.approval_changed',
  'bots.user_activity',
  'bots.repaired',
  // Check-ins count in needs-attention: a resolved one changes the badges.
  'heartbeat.checkin_changed',
] as const;

const VIEW_KEY = 'subconscious.bots.view';

function savedView(): BotsView {
  try {
    const v = JSON.parse(sessionStorage.getItem(VIEW_KEY) ?? 'null') as BotsView | null;
    return v && typeof v === 'object' && typeof v.kind === 'string' ? v : { kind: 'none' };
  } catch {
    return { kind: 'none' };
  }
}

export function directThread(snapshot: Snapshot | undefined, botId: string): ThreadSummary | undefined {
  return snapshot?.threads.find((t) => t.kind === 'direct' && t.bot_ids[0] === botId);
}

export function BotsTab() {
  const snapshot = useLiveRpc('bots.snapshot', {}, SNAPSHOT_EVENTS);
  const external = useExternalBots();
  const [view, setViewState] = useState<BotsView>(savedView);
  const setView = useCallback((v: BotsView) => {
    setViewState(v);
    sessionStorage.setItem(VIEW_KEY, JSON.stringify(v));
    // The chosen view's heading takes the focus, so keyboard and screen-reader users land there.
    requestAnimationFrame(() => document.querySelector<HTMLElement>('[data-bots-focus]')?.focus({ preventScroll: false }));
  }, []);
  const data = snapshot.data;

  // A view of something that existed and is gone now (deleted elsewhere), or that the first
  // snapshot does not hold (a view kept from an earlier visit), falls back to the list.
  // Something new and not seen yet is left alone: the snapshot that holds it is on its way.
  const seen = useRef<Set<string> | null>(null);
  useEffect(() => {
    if (!data) return;
    const present = new Set([...data.threads.map((t) => t.id), ...data.bots.map((b) => b.id)]);
    const id = view.kind === 'thread' ? view.threadId : view.kind === 'edit-bot' ? view.botId : null;
    if (id !== null && !present.has(id) && (seen.current === null || seen.current.has(id))) setViewState({ kind: 'none' });
    seen.current ??= new Set();
    for (const p of present) seen.current.add(p);
  }, [data, view]);

  const openBot = (bot: BotWithStatus) => {
    const thread = directThread(data, bot.id);
    if (thread) setView({ kind: 'thread', threadId: thread.id });
  };

  const thread = view.kind === 'thread' ? data?.threads.find((t) => t.id === view.threadId) : undefined;
  const panelBot = thread?.kind === 'direct' ? data?.bots.find((b) => b.id === thread.bot_ids[0]) : undefined;

  return (
    <div className="bots" data-view={view.kind === 'none' ? 'list' : 'detail'} data-testid="bots-tab">
      <aside className="bots-side">
        <BotList snapshot={snapshot} external={external} view={view} setView={setView} openBot={openBot} />
      </aside>
      <div className="bots-main">
        {view.kind !== 'none' && (
          <button type="button" className="link bots-back" onClick={() => setView({ kind: 'none' })}>
            ← All bots and groups
          </button>
        )}
        {snapshot.error !== undefined && !data && (
          <p className="coral" role="alert">
            The bots could not be read: <MessageText text={explain(snapshot.error)} />
          </p>
        )}
        {view.kind === 'none' && data && (
          <Intro empty={data.bots.length === 0} external={external.data?.length ?? 0} onCreate={() => setView({ kind: 'new-bot' })} />
        )}
        {view.kind === 'new-bot' && <BotForm onDone={(bot) => (bot ? openBotById(bot.id) : setView({ kind: 'none' }))} />}
        {view.kind === 'edit-bot' && data && (
          <BotForm
            key={view.botId}
            bot={data.bots.find((b) => b.id === view.botId)}
            onDone={(bot) => (bot ? openBotById(bot.id) : setView({ kind: 'none' }))}
          />
        )}
        {view.kind === 'new-group' && data && (
          <GroupForm bots={data.bots} onDone={(threadId) => setView(threadId ? { kind: 'thread', threadId } : { kind: 'none' })} />
        )}
        {view.kind === 'thread' && thread && data && (
          <div className={`bots-conversation${panelBot ? ' with-panel' : ''}`}>
            <ThreadView key={thread.id} summary={thread} snapshot={data} onEditBot={(botId) => setView({ kind: 'edit-bot', botId })} />
            {panelBot && (
              <BotPanel
                bot={panelBot}
                thread={thread}
                onEdit={() => setView({ kind: 'edit-bot', botId: panelBot.id })}
                onDeleted={() => {
                  setView({ kind: 'none' });
                  void snapshot.reload();
                }}
              />
            )}
          </div>
        )}
      </div>
    </div>
  );

  /** After a create or an edit: the bot's own thread (asked fresh: the snapshot may not hold a new bot's yet). */
  function openBotById(botId: string) {
    void call('bots.threads_list', { bot_id: botId })
      .then((threads) => {
        const direct = threads.find((t) => t.kind === 'direct');
        setView(direct ? { kind: 'thread', threadId: direct.id } : { kind: 'none' });
        return snapshot.reload();
      })
      .catch(() => setView({ kind: 'none' }));
  }
}

/** What a bot is, for someone who has none yet (and a short hint once they do). */
function Intro(props: { empty: boolean; external: number; onCreate: () => void }) {
  if (props.empty && props.external > 0) {
    return (
      <div className="bots-intro card" data-testid="bots-external-only">
        <h2 tabIndex={-1} data-bots-focus>
          Your runtime’s bots are on the left
        </h2>
        <p className="muted">They run in your own agent runtime: the list shows what it reports. To talk to a bot here, create one of this page’s own.</p>
        <button type="button" className="primary" onClick={props.onCreate}>
          Create a bot
        </button>
      </div>
    );
  }
  if (!props.empty) {
    return (
      <div className="bots-intro card" data-testid="bots-pick">
        <h2 tabIndex={-1} data-bots-focus>
          Pick a bot or a group
        </h2>
        <p className="muted">Choose a bot on the left to talk to it in its own thread, or a group to talk to several at once with @mentions.</p>
      </div>
    );
  }
  return (
    <div className="bots-intro card" data-testid="bots-empty">
      <h2 tabIndex={-1} data-bots-focus>
        No bots yet
      </h2>
      <p>
        A <strong>bot</strong> is an AI teammate you give work to. It has a name you can <code>@mention</code>, a persona that says how it works, a model, and
        the tools (MCP servers) it may use. Talk to one in its own thread, or bring several into a group where <code>@name</code> says who answers and one bot
        can hand work to another.
      </p>
      <p className="muted">
        Each request becomes a task you can follow and stop. When a bot wants to use a tool that changes something, it asks first: the approval shows up in the
        thread, and nothing runs until you approve it. Routines give a bot the same work on a schedule.
      </p>
      <button type="button" className="primary" onClick={props.onCreate}>
        Create a bot
      </button>
    </div>
  );
}
