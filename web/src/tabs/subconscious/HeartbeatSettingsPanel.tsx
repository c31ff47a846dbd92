/**
 * The heartbeat's settings for all bots in the Settings section (issue 23): the same form and the
 * same RPC as the Bots tab (`bots.set_heartbeat_settings`), so one place shows every setting.
 * They live in the database, not in subconscious.toml, so the whole cluster shares them.
 */
import { METHOD_NOT_FOUND, RpcError, explain } from '../../api/rpc.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { MessageText } from '../../ui/MessageText.js';
import { GlobalHeartbeatSettings } from '../bots/HeartbeatSettings.js';
import '../bots/heartbeat.css';

const EVENTS = ['heartbeat.settings_changed'] as const;
const NO_BOTS: string[] = [];

export function HeartbeatSettingsPanel() {
  const snap = useLiveRpc('bots.heartbeat_snapshot', { bot_ids: NO_BOTS }, EVENTS);
  let body;
  if (snap.data) body = <GlobalHeartbeatSettings settings={snap.data.settings} onSaved={() => void snap.reload()} summary="Heartbeat, for all bots" open />;
  else if (snap.error instanceof RpcError && snap.error.rpcCode === METHOD_NOT_FOUND)
    body = <p className="muted small">The heartbeat is not part of this daemon: it has no settings to show.</p>;
  else
    body = (
      <p className={snap.error ? 'coral small' : 'muted small'}>
        {snap.error ? <MessageText text={`The heartbeat’s settings could not be read: ${explain(snap.error)}`} /> : 'Reading the heartbeat’s settings…'}
      </p>
    );
  return (
    <div className="settings-heartbeat" data-testid="settings-heartbeat">
      {body}
    </div>
  );
}
