/**
 * The Steering tab (issue 14 §5): the directive steering the harness's reasoning tier now (or the
 * default line), the directive history, the harness's recent cycles — the path each took through
 * the graph, the gate's decision, evictions and the world diff — and a box to send a channel
 * message, whose cycle appears here live (it follows `orchestration.cycle` events).
 */
import { METHOD_NOT_FOUND, RpcError } from '../../api/rpc.js';
import type { HarnessStateView } from '../../../../src/protocol/index.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { CurrentDirective } from './CurrentDirective.js';
import { Cycles } from './Cycles.js';
import { DirectiveHistory } from './DirectiveHistory.js';
import { SendMessage } from './SendMessage.js';
import './steering.css';

const CYCLE_EVENTS = ['orchestration.cycle'] as const;
/** A review, a new directive and every finished cycle (which ages the directive) change these. */
const STEERING_EVENTS = ['steering.directive', 'steering.reviewed', 'orchestration.cycle', 'tick.finished'] as const;
const RECENT_CYCLES = 20;

export function SteeringTab() {
  const current = useLiveRpc('steering.current', {}, STEERING_EVENTS);
  const history = useLiveRpc('steering.list', { limit: 50 }, STEERING_EVENTS);
  // Poll while a cycle is queued or running, in case the event stream is down.
  const cycles = useLiveRpc('orchestration.cycles', { limit: RECENT_CYCLES }, CYCLE_EVENTS, (rows) =>
    rows.some((c) => c.status === 'queued' || c.status === 'running'),
  );
  const harness = useLiveRpc('orchestration.state', {}, CYCLE_EVENTS);

  const missing = [current.error, cycles.error].some((e) => e instanceof RpcError && e.rpcCode === METHOD_NOT_FOUND);
  if (missing) {
    return (
      <div className="steering" data-testid="steering-unavailable">
        <p>This daemon runs no orchestration harness or steering world, so there is nothing to steer.</p>
      </div>
    );
  }

  return (
    <div className="steering">
      <OfflineBanner harness={harness.data} />
      <Terms />
      <div className="steering-top">
        <CurrentDirective current={current} harness={harness} />
        <SendMessage onSent={() => void cycles.reload()} />
      </div>
      <div className="columns steering-columns">
        <div className="column">
          <Cycles cycles={cycles} />
        </div>
        <div className="column">
          <DirectiveHistory history={history} />
        </div>
      </div>
    </div>
  );
}

/**
 * Offline mode said where it cannot be missed (issue 23): no model answers on this tab, and the
 * answers below are fixed stand-ins that exercise the graph — not replies.
 */
function OfflineBanner(props: { harness: HarnessStateView | undefined }) {
  const h = props.harness;
  if (!h || h.mode !== 'offline') return null;
  return (
    <div className="banner banner-warn steering-offline" role="status" data-testid="steering-offline">
      <strong>Offline mode: no model answers here.</strong> Each cycle runs the graph with fixed stand-ins, so the answers below are placeholders the harness
      makes up, not replies.{' '}
      {h.mode_reason ? (
        <>Why: {h.mode_reason}. </>
      ) : h.configured_mode === 'offline' ? (
        <>
          It is set so in <code>subconscious.toml</code>. Set <code>[worlds.orchestration] mode = "live"</code> (or <code>"auto"</code>) to use the models.
        </>
      ) : null}
    </div>
  );
}

/** The three words that must stay, each in one line. */
function Terms() {
  return (
    <dl className="steering-terms" aria-label="What the words on this tab mean">
      <div>
        <dt>Cycle</dt>
        <dd>
          One channel message’s trip through the harness: quick tier, reasoning tier, gate, context manager — and the subconscious layer when the gate forwards.
        </dd>
      </div>
      <div>
        <dt>Gate</dt>
        <dd>Holds the world changes each cycle makes, and forwards them for review once 3 are queued or the reasoning tier flags something critical.</dd>
      </div>
      <div>
        <dt>Directive</dt>
        <dd>
          One short instruction the steering world writes after a review; it goes into the reasoning tier’s instructions for a number of cycles, then expires.
        </dd>
      </div>
    </dl>
  );
}
