/**
 * The heartbeat's section in a bot's panel (seed 2 §10.4, §11 `client.js`; issue 12 §10): whether
 * it is on and in which mode, its state and next check, today's pulses and resumes against their
 * budgets, the last verdict and the why of the last wake or skip, Check now; the check-ins that
 * wait for the person (a reply in the thread resolves them; Dismiss, Retry); the bot's pending
 * follow-ups and a "check back later" reminder; the log of checks, each with its why; the
 * settings for this bot and for all bots, with what is sent to the pulse model.
 *
 * Rendered for direct threads only (the heartbeat never acts in a group). While the person types
 * in this bot's thread, the heartbeat is told (debounced): it never wakes a bot over its person.
 */
import { useEffect } from 'react';
import type { BotWithStatus, Thread } from '../../../../src/protocol/bots.js';
import { call, explain, METHOD_NOT_FOUND, RpcError } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { Switch } from '../../ui/Switch.js';
import { HeartbeatCheckins } from './HeartbeatCheckins.js';
import { HeartbeatFollowUps } from './HeartbeatFollowUps.js';
import { HeartbeatLog } from './HeartbeatLog.js';
import { BotHeartbeatSettings, GlobalHeartbeatSettings, PulseDisclosure } from './HeartbeatSettings.js';
import { HeartbeatStatus } from './HeartbeatStatus.js';
import './heartbeat.css';

export interface HeartbeatSlotProps {
  bot: BotWithStatus;
  /** The bot's direct thread. */
  thread: Thread;
}

export const HEARTBEAT_EVENTS = [
  'heartbeat.bot_changed',
  'heartbeat.log_added',
  'heartbeat.checkin_changed',
  'heartbeat.followup_changed',
  'heartbeat.settings_changed',
] as const;

/** While the person types: at most one mark this often (each holds the heartbeat off the thread for 2 min). */
const TYPING_MARK_MS = 30_000;

export function HeartbeatSlot(props: HeartbeatSlotProps) {
  const { bot, thread } = props;
  const { notify } = useShell();
  const snap = useLiveRpc('bots.heartbeat_snapshot', { bot_ids: [bot.id] }, HEARTBEAT_EVENTS);
  useTypingMarksActive(thread.id);

  const data = snap.data;
  const hb = data?.bots.find((b) => b.bot_id === bot.id);

  if (snap.error instanceof RpcError && snap.error.rpcCode === METHOD_NOT_FOUND) {
    return (
      <Section id="bot-heartbeat" title="Heartbeat">
        <p className="muted small" data-testid="heartbeat-absent">
          <MessageText text="The heartbeat is not running in this daemon (its config says `[worlds.heartbeat] enabled = false`). Unfinished work is not picked up by itself." />
        </p>
      </Section>
    );
  }

  const setEnabled = async (enabled: boolean) => {
    try {
      await call('bots.set_heartbeat', { bot_id: bot.id, enabled });
      await snap.reload();
    } catch (err) {
      notify(`Could not switch the heartbeat of @${bot.name} ${enabled ? 'on' : 'off'}: ${explain(err)}`, 'error');
    }
  };

  return (
    <Section
      id="bot-heartbeat"
      title="Heartbeat"
      actions={
        hb && (
          <label className="switch-label hb-switch">
            <Switch checked={hb.enabled} label={`Heartbeat for @${bot.name}`} onChange={(v) => void setEnabled(v)} />
            <span aria-hidden="true">{hb.enabled ? 'On' : 'Off'}</span>
          </label>
        )
      }
    >
      <p className="muted small hb-intro">
        When @{bot.name} stops with work unfinished (a crash, a timeout, an expired approval, a promise to follow up), the heartbeat notices and picks it up —
        and costs nothing while nothing is unfinished.
      </p>
      {!data && (
        <p className={snap.error ? 'coral small' : 'muted small'} role={snap.error ? 'alert' : undefined}>
          {snap.error ? (
            <>
              The heartbeat could not be read: <MessageText text={explain(snap.error)} />
            </>
          ) : (
            'Reading the heartbeat…'
          )}
        </p>
      )}
      {/* Keyed by bot: the panel stays when another bot's thread opens, its drafts and pages must not. */}
      {data && hb && (
        <>
          <HeartbeatStatus key={`status-${bot.id}`} bot={bot} hb={hb} snapshot={data} onChanged={() => void snap.reload()} />
          <HeartbeatCheckins bot={bot} checkins={data.checkins.filter((c) => c.bot_id === bot.id)} log={data.log} onChanged={() => void snap.reload()} />
          <HeartbeatFollowUps
            key={`followups-${bot.id}`}
            bot={bot}
            followups={data.followups.filter((f) => f.bot_id === bot.id)}
            onChanged={() => void snap.reload()}
          />
          <HeartbeatLog key={`log-${bot.id}`} bot={bot} entries={data.log} />
          <div className="hb-settings-group">
            <h3 className="hb-subhead">Settings</h3>
            <PulseDisclosure bot={bot} model={hb.model} />
            <BotHeartbeatSettings key={`settings-${bot.id}`} bot={bot} hb={hb} onSaved={() => void snap.reload()} />
            <GlobalHeartbeatSettings settings={data.settings} onSaved={() => void snap.reload()} />
          </div>
        </>
      )}
    </Section>
  );
}

/**
 * A person typing in this thread is active there (`bots.mark_user_active`): the heartbeat then
 * holds its checks of the thread's bot until 90 s after it, so it never answers over them. The composer
 * is the thread's; this listens for its input events instead of reaching into it.
 */
function useTypingMarksActive(threadId: string): void {
  useEffect(() => {
    let last = 0;
    const onInput = (e: Event) => {
      const target = e.target as Element | null;
      if (!target?.closest?.(`[data-testid="thread"][data-thread-id="${CSS.escape(threadId)}"] form.composer`)) return;
      const now = Date.now();
      if (now - last < TYPING_MARK_MS) return;
      last = now;
      void call('bots.mark_user_active', { thread_id: threadId }).catch(() => {
        last = 0; // try again on the next keystroke
      });
    };
    document.addEventListener('input', onInput);
    return () => document.removeEventListener('input', onInput);
  }, [threadId]);
}
