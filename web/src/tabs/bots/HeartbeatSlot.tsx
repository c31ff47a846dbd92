/**
 * The heartbeat's place in a bot's panel (seed 2 §11 `client.js`: mode, next check, today's
 * counts, verdicts, Check now, check-ins). Issue 12 fills this component; the bot panel already
 * renders it between the bot's facts and its routines, for direct threads only (the heartbeat
 * never acts in a group). Render a `<Section id="bot-heartbeat" title="Heartbeat">` (ui/Section)
 * or nothing; read with `useLiveRpc` (its own `bots.heartbeat_*`/`heartbeat.*` methods and events).
 * `bot.checking` (a pulse in flight) is already shown as "Checking in…" by the bot list and the
 * thread header.
 */
import type { BotWithStatus, Thread } from '../../../../src/protocol/bots.js';

export interface HeartbeatSlotProps {
  bot: BotWithStatus;
  /** The bot's direct thread. */
  thread: Thread;
}

export function HeartbeatSlot(_props: HeartbeatSlotProps) {
  return null;
}
