/**
 * The page-wide warnings: the daemon cannot be reached, a world's model (or a model some of its
 * work needs) is unavailable, or the world is halted. Each says what is wrong (the status's own
 * reason) and what to do. Words that depend on the world (its config keys) come from the daemon's
 * reason, never from here: the page serves every world.
 */
import type { LiveSnapshot } from '../api/live.js';
import type { WorldStatus } from '../api/types.js';
import { worldLabel } from '../ui/format.js';
import { MessageText } from '../ui/MessageText.js';
import { useNow } from './hooks.js';

/** What fails without each model role, in words a person knows from the page. */
const ROLE_WORK: Record<WorldStatus['optional_models_unavailable'][number]['role'], string> = {
  local: 'evaluations and short text answers',
  agent: 'tasks that use tools and approved actions ("Go ahead")',
};

export function Banners(props: { liveState: LiveSnapshot; rpcDown: boolean; worlds: WorldStatus[]; retry: () => void }) {
  const down = props.rpcDown;
  const streamDown = !down && props.liveState.state === 'down';
  const now = useNow(1000, down || streamDown);
  const retryIn = props.liveState.retryAt ? Math.max(0, Math.ceil((props.liveState.retryAt - now) / 1000)) : null;
  return (
    <div className="banners">
      {down && (
        <div className="banner banner-error" role="alert" data-testid="banner-unreachable">
          <strong>The subconscious daemon is unreachable.</strong>{' '}
          <span>
            Nothing on this page is live until it answers again at {window.location.host}. Check that <code>subconscious start</code> is still running (or start
            it again in the workspace). {retryIn !== null && props.liveState.state === 'down' ? `Trying again in ${retryIn} s.` : 'Trying again every 2 s.'}
          </span>{' '}
          <button type="button" className="link" onClick={props.retry}>
            Retry now
          </button>
        </div>
      )}
      {streamDown && (
        <div className="banner banner-warn" role="status" data-testid="banner-stream">
          <strong>Live updates are interrupted.</strong>{' '}
          <span>
            The daemon answers, but its event stream does not, so the page refreshes running work every 2 s instead.{' '}
            {retryIn !== null ? `Reconnecting in ${retryIn} s.` : 'Reconnecting…'}
          </span>{' '}
          <button type="button" className="link" onClick={props.retry}>
            Reconnect now
          </button>
        </div>
      )}
      {!down &&
        props.worlds.map((w) =>
          w.halted ? (
            <div key={`halt-${w.world}`} className="banner banner-error" role="alert" data-testid={`banner-halted-${w.world}`}>
              <strong>{worldLabel(w.world)} is halted.</strong>{' '}
              <span>
                <MessageText text={w.halt_reason ?? 'No reason was recorded.'} />
              </span>{' '}
              <span className="banner-todo">
                The model cannot take this world’s requests (its size or rate limit), so retrying as it is would not help. Do what the reason above says, or
                choose a model or provider with a larger limit in <code>subconscious.toml</code> and restart the daemon (the halt lifts by itself when the model
                changes); after any other change press “Try again” on the world’s card.
              </span>
            </div>
          ) : w.enabled && w.provider_available === false ? (
            <div key={`model-${w.world}`} className="banner banner-warn" role="status" data-testid={`banner-model-${w.world}`}>
              <strong>{worldLabel(w.world)}: the model is unavailable.</strong>{' '}
              <span>
                <MessageText text={w.provider_unavailable_reason ?? 'The model endpoint did not answer.'} />
              </span>{' '}
              <span className="banner-todo">
                Start the model server (for Ollama: <code>ollama serve</code>) or fix the endpoint under <code>[models]</code> in <code>subconscious.toml</code>
                . Work that needs no model keeps running; the next tick checks again.
              </span>
            </div>
          ) : null,
        )}
      {!down &&
        props.worlds.flatMap((w) =>
          w.enabled && !w.halted && w.provider_available !== false
            ? w.optional_models_unavailable.map((m) => (
                <div key={`optional-${w.world}-${m.role}`} className="banner banner-warn" role="status" data-testid={`banner-optional-${w.world}-${m.role}`}>
                  <strong>
                    {worldLabel(w.world)}: the {m.role} model is unavailable.
                  </strong>{' '}
                  <span>
                    <MessageText text={m.reason} />
                  </span>{' '}
                  <span className="banner-todo">
                    Ticks still run, but {ROLE_WORK[m.role]} fail until it answers. Start it or fix <code>[models.{m.role}]</code> in{' '}
                    <code>subconscious.toml</code>; the next tick checks again.
                  </span>
                </div>
              ))
            : [],
        )}
    </div>
  );
}
