/**
 * The Subconscious thread (the memory world's notifications, once there is one), the bots
 * (status, unread, needs-attention) and the group threads, each a button that opens its thread.
 * Status is said in words beside its dot; counts have their meaning in their label.
 */
import type { BotWithStatus, Snapshot, ThreadSummary } from '../../../../src/protocol/bots.js';
import type { Resource } from '../../shell/resource.js';
import { Dot, type DotColor } from '../../ui/Dot.js';
import type { BotsView } from './BotsTab.js';
import { ExternalBots } from './ExternalBots.js';
import type { ExternalBotStatus } from '../../../../src/protocol/runtimes.js';

export function statusOf(bot: BotWithStatus): { color: DotColor; text: string; pulse: boolean } {
  if (bot.checking && bot.status === 'idle') return { color: 'blue', text: 'checking in…', pulse: true };
  if (bot.status === 'working') return { color: 'blue', text: bot.queued ? `working, ${bot.queued} queued` : 'working', pulse: true };
  if (bot.status === 'queued') return { color: 'amber', text: bot.queued > 1 ? `${bot.queued} queued` : 'queued', pulse: false };
  return { color: 'gray', text: 'idle', pulse: false };
}

export function BotList(props: {
  snapshot: Resource<Snapshot>;
  external: Resource<ExternalBotStatus[]>;
  view: BotsView;
  setView: (v: BotsView) => void;
  openBot: (bot: BotWithStatus) => void;
}) {
  const data = props.snapshot.data;
  const current = props.view.kind === 'thread' ? props.view.threadId : null;
  const groups = (data?.threads ?? []).filter((t) => t.kind === 'group');
  const direct = (botId: string) => data?.threads.find((t) => t.kind === 'direct' && t.bot_ids[0] === botId);
  const subconscious = data?.threads.find((t) => t.kind === 'system');
  // Beside your runtimes' bots, "Bots 0 · No bots yet" would read as if there were none at all.
  const runtimeBots = (props.external.data?.length ?? 0) > 0;

  return (
    <nav className="bot-nav" aria-label="Bots and groups">
      {subconscious && (
        <ul className="bot-items" aria-label="Notifications">
          <li>
            <button
              type="button"
              className="bot-item"
              aria-current={subconscious.id === current ? 'page' : undefined}
              onClick={() => props.setView({ kind: 'thread', threadId: subconscious.id })}
              data-testid="subconscious-item"
            >
              <span className="bot-item-main">
                <span className="bot-item-label">{subconscious.name}</span>
                <span className="bot-item-handle">what your memory review tells you</span>
              </span>
              <Counts unread={subconscious.unread} attention={0} />
            </button>
          </li>
        </ul>
      )}
      <div className="bot-nav-head">
        <h2 id="bots-heading" data-testid="own-bots-heading">
          {runtimeBots ? 'This page’s bots' : 'Bots'}
          {data && (data.bots.length > 0 || !runtimeBots) && <span className="count">{data.bots.length}</span>}
        </h2>
        <button type="button" onClick={() => props.setView({ kind: 'new-bot' })} aria-pressed={props.view.kind === 'new-bot'}>
          New bot
        </button>
      </div>
      {!data && <p className="muted small">{props.snapshot.error ? 'Could not load the bots.' : 'Loading…'}</p>}
      {data && data.bots.length === 0 && (
        <p className="muted small" data-testid="own-bots-empty">
          {runtimeBots ? 'None made on this page yet; your runtimes’ bots are listed below.' : 'No bots yet.'}
        </p>
      )}
      {data && data.bots.length > 0 && (
        <ul className="bot-items" aria-labelledby="bots-heading" data-testid="bot-list">
          {data.bots.map((bot) => {
            const thread = direct(bot.id);
            const s = statusOf(bot);
            return (
              <li key={bot.id}>
                <button
                  type="button"
                  className="bot-item"
                  aria-current={thread && thread.id === current ? 'page' : undefined}
                  onClick={() => props.openBot(bot)}
                  data-testid="bot-item"
                  data-bot-name={bot.name}
                  data-status={bot.status}
                >
                  <span className="bot-item-main">
                    <span className="bot-item-label">{bot.label}</span>
                    <span className="bot-item-handle">@{bot.name}</span>
                  </span>
                  <span className="bot-item-status" data-testid="bot-status">
                    <Dot color={s.color} pulse={s.pulse} />
                    {s.text}
                  </span>
                  <Counts unread={thread?.unread ?? 0} attention={bot.needs_attention} />
                </button>
              </li>
            );
          })}
        </ul>
      )}

      <ExternalBots bots={props.external} />

      <div className="bot-nav-head">
        <h2 id="groups-heading">Groups{data && groups.length > 0 && <span className="count">{groups.length}</span>}</h2>
        <button
          type="button"
          onClick={() => props.setView({ kind: 'new-group' })}
          aria-pressed={props.view.kind === 'new-group'}
          disabled={!data || data.bots.length < 2}
          title={data && data.bots.length < 2 ? 'A group needs at least two bots' : undefined}
        >
          New group
        </button>
      </div>
      {data && groups.length === 0 && (
        <p className="muted small">{data.bots.length < 2 ? 'With two bots or more, a group lets them work together.' : 'No groups yet.'}</p>
      )}
      {groups.length > 0 && (
        <ul className="bot-items" aria-labelledby="groups-heading" data-testid="group-list">
          {groups.map((g) => (
            <li key={g.id}>
              <GroupItem group={g} bots={data?.bots ?? []} current={g.id === current} open={() => props.setView({ kind: 'thread', threadId: g.id })} />
            </li>
          ))}
        </ul>
      )}
    </nav>
  );
}

function GroupItem(props: { group: ThreadSummary; bots: BotWithStatus[]; current: boolean; open: () => void }) {
  const { group } = props;
  const members = group.bot_ids.map((id) => props.bots.find((b) => b.id === id)).filter((b): b is BotWithStatus => !!b);
  const busy = members.filter((b) => b.status !== 'idle').length;
  return (
    <button type="button" className="bot-item" aria-current={props.current ? 'page' : undefined} onClick={props.open} data-testid="group-item">
      <span className="bot-item-main">
        <span className="bot-item-label">{group.name}</span>
        <span className="bot-item-handle">{members.map((m) => `@${m.name}`).join(' ')}</span>
      </span>
      <span className="bot-item-status">
        <Dot color={busy ? 'blue' : 'gray'} pulse={busy > 0} />
        {busy ? `${busy} working` : 'idle'}
      </span>
      <Counts unread={group.unread} attention={group.needs_attention} />
    </button>
  );
}

function Counts(props: { unread: number; attention: number }) {
  if (!props.unread && !props.attention) return null;
  return (
    <span className="bot-item-counts">
      {props.attention > 0 && (
        <span className="badge badge-waiting" data-testid="needs-attention">
          {props.attention} {props.attention === 1 ? 'needs' : 'need'} you
        </span>
      )}
      {props.unread > 0 && (
        <span className="badge badge-quiet" data-testid="unread">
          {props.unread} new
        </span>
      )}
    </span>
  );
}
