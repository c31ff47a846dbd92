/**
 * The bots of your own agent runtimes (issue 18 §6): each with its runtime's name, its status as
 * the runtime's reports give it, when it was last reported, and whether the runtime is reachable.
 * Read-only: they run in their runtime, and this page cannot talk to them or change them there.
 */
import type { ExternalBotStatus } from '../../../../src/protocol/runtimes.js';
import { useLiveRpc } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { relativeTime } from '../../ui/format.js';

const EVENTS = ['runtime.changed', 'runtime.reported', 'runtime.dispatch_changed'] as const;

function statusText(b: ExternalBotStatus): string {
  if (b.status === 'working') return b.task_title ? `working on “${b.task_title}”` : 'working';
  if (b.status === 'queued') return 'a resume is on its way';
  return 'idle';
}

/** The external bots, kept live (the Bots tab reads them once for its list and its intro). */
export function useExternalBots(): Resource<ExternalBotStatus[]> {
  return useLiveRpc('runtime.bots', {}, EVENTS);
}

export function ExternalBots(props: { bots: Resource<ExternalBotStatus[]> }) {
  // A daemon without the runtimes module (or with no runtime registered) shows nothing here.
  const list = props.bots.data ?? [];
  if (list.length === 0) return null;
  const now = Date.now();
  return (
    <section className="external-bots" aria-labelledby="external-bots-heading" data-testid="external-bots">
      <div className="bot-nav-head">
        <h2 id="external-bots-heading">
          Your runtimes’ bots<span className="count">{list.length}</span>
        </h2>
      </div>
      <p className="muted small" data-testid="external-bots-note">
        These bots run in your own agent runtime. This page shows what the runtime reports; it cannot talk to them or change them — do that in the runtime.
      </p>
      <ul className="bot-items" aria-labelledby="external-bots-heading" data-testid="external-bot-list">
        {list.map((b) => (
          <li key={b.subconscious_id}>
            <div className="bot-item external-bot-item" data-testid="external-bot-item" data-bot-name={b.name} data-status={b.status}>
              <span className="bot-item-main">
                <span className="bot-item-label">{b.label}</span>
                <span className="bot-item-handle" data-testid="external-bot-runtime">
                  @{b.name} · in {b.runtime_name}
                </span>
              </span>
              <span className="bot-item-status" data-testid="external-bot-status">
                <Dot color={b.status === 'working' ? 'blue' : b.status === 'queued' ? 'amber' : 'gray'} pulse={b.status === 'working'} />
                {statusText(b)}
              </span>
              <span className="muted small" data-testid="external-bot-reported">
                {b.reported_at === null ? 'nothing reported yet' : `last report ${relativeTime(b.reported_at, now)}`}
              </span>
              <span className={`small${b.reachable ? ' muted' : ' coral'}`} data-testid="external-bot-reachable" data-reachable={b.reachable}>
                {b.reachable ? `${b.runtime_name} is reachable` : `${b.runtime_name} is not reachable. ${b.unreachable_reason ?? ''}`}
              </span>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
