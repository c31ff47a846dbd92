/**
 * The directive in force, with the cycles it still steers — or, said plainly, that none is and
 * which default line the reasoning tier gets instead. Below it: the last review, the steering
 * world's own state (off, failing, model unavailable) and the harness's mode.
 */
import type { HarnessStateView, SteeringCurrent, StatusResult } from '../../../../src/protocol/index.js';
import { explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { everyWords, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { directiveWindow, plural } from './words.js';

export function CurrentDirective(props: { current: Resource<SteeringCurrent>; harness: Resource<HarnessStateView> }) {
  const { status } = useShell();
  const now = useNow(30_000);
  const c = props.current.data;
  const d = c?.directive ?? null;
  const interval = status.data?.instances.find((i) => i.world === 'steering')?.interval_minutes;

  return (
    <Section id="steering-current" title="Directive in force">
      {!c && (
        <p className={props.current.error ? 'coral' : 'muted'}>
          {props.current.error ? <MessageText text={`The directive could not be read: ${explain(props.current.error)}`} /> : 'Reading the directive…'}
        </p>
      )}
      {c && d && (
        <div className="card directive-card directive-active" data-testid="directive-current" data-remaining={d.remaining_cycles}>
          <blockquote className="directive-text">{d.text}</blockquote>
          <p className="directive-meta">
            <strong data-testid="directive-remaining">{plural(d.remaining_cycles, 'cycle')} left</strong>
            <span className="muted">
              {' '}
              · steers {directiveWindow(d)} · made after cycle {d.cycle} from a review of {reviewedSpan(d.reviewed_from_seq, d.reviewed_to_seq)} ·{' '}
              <span title={fullTime(d.created_at)}>{relativeTime(d.created_at, now)}</span>
            </span>
          </p>
        </div>
      )}
      {c && !d && (
        <div className="card directive-card directive-none" data-testid="directive-none">
          <p>
            <strong>No directive is in force.</strong> The reasoning tier gets the default line instead:
          </p>
          <blockquote className="directive-text directive-default">{c.injected}</blockquote>
        </div>
      )}
      {c && (
        <ul className="steering-facts small">
          <li data-testid="last-review">
            {c.last_review ? (
              <>
                Last review: {c.last_review.outcome === 'directive' ? 'wrote a directive' : 'nothing needed steering'} after reading{' '}
                {plural(c.last_review.rows, 'cycle')}, <span title={fullTime(c.last_review.at)}>{relativeTime(c.last_review.at, now)}</span>. Cycles up to{' '}
                {c.reviewed_seq} are reviewed.
              </>
            ) : (
              `No review yet: the steering world reviews as soon as the gate forwards a cycle${interval ? `, and ${everyWords(interval)} when there is something new` : ''}.`
            )}
          </li>
          <WorldState status={status.data} />
          <HarnessLine harness={props.harness.data} />
        </ul>
      )}
    </Section>
  );
}

function reviewedSpan(from: number, to: number): string {
  return from === to ? `cycle ${from}` : `cycles ${from}–${to}`;
}

/** The steering world's engine status, when it says something a person should know. */
function WorldState(props: { status: StatusResult | undefined }) {
  const w = props.status?.instances.find((i) => i.world === 'steering');
  if (!props.status) return null;
  if (!w) return <li className="coral">The steering world is not running in this daemon: no directive will be written.</li>;
  if (!w.enabled) {
    return (
      <li className="coral" data-testid="steering-off">
        The steering world is off{w.disabled_by ? ` (${w.disabled_by})` : ''}: no new directive will be written.{' '}
        {w.disabled_by
          ? 'Switch it on in the Subconscious tab: that sets enabled = true under [worlds.steering] in subconscious.toml, and it applies at once.'
          : 'Switch it on in the Subconscious tab.'}
      </li>
    );
  }
  if (w.running) return <li data-testid="steering-reviewing">The steering world is reviewing now…</li>;
  if (w.halted) return <li className="coral">The steering world is halted: {w.halt_reason ?? 'see the Subconscious tab'}.</li>;
  if (w.provider_available === false) {
    return (
      <li className="coral">
        Its model is unavailable: <MessageText text={w.provider_unavailable_reason ?? 'no answer'} />
      </li>
    );
  }
  if (w.consecutive_failures > 0 && w.last_error) {
    return (
      <li className="coral" data-testid="steering-failing">
        Its last review failed (the same cycles are reviewed again next time): <MessageText text={w.last_error} />
      </li>
    );
  }
  return null;
}

function HarnessLine(props: { harness: HarnessStateView | undefined }) {
  const h = props.harness;
  if (!h) return null;
  const mode = h.mode === 'offline' ? 'offline mode (deterministic stand-ins, no model)' : 'live mode (local model, agent runner, memory store)';
  return (
    <li className="muted" data-testid="harness-line">
      Harness in {mode}: {plural(h.cycle, 'cycle')} so far{h.running ? ', one running' : ''}
      {h.queued ? `, ${h.queued} waiting` : ''}; context {Math.round(h.context_utilization * 100)}% full (evicts at {Math.round(h.eviction_threshold * 100)}
      %); {plural(h.sequential_diffs.length, 'change')} waiting at the gate.
      {h.mode_reason && <span data-testid="harness-mode-reason"> Why offline: {h.mode_reason}.</span>}
    </li>
  );
}
