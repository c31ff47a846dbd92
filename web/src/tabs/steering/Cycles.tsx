/**
 * The harness's recent cycles, newest first: the path each took through the graph, the gate's
 * decision and why, the directive it was steered by, evictions, the world diff it made, and the
 * answer on its channel. The event log and the 20:1 compressed row are one click away.
 */
import type { CycleRow } from '../../../../src/protocol/index.js';
import { explain } from '../../api/rpc.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { CYCLE_STATUS, NODE_LABELS, delta, gateSentence, pathOf, plural } from './words.js';

export function Cycles(props: { cycles: Resource<CycleRow[]> }) {
  const now = useNow(30_000);
  const rows = props.cycles.data;
  return (
    <Section id="steering-cycles" title="Recent cycles" count={rows?.length}>
      {!rows && (
        <p className={props.cycles.error ? 'coral' : 'muted'}>
          {props.cycles.error ? <MessageText text={`The cycles could not be read: ${explain(props.cycles.error)}`} /> : 'Reading the cycles…'}
        </p>
      )}
      {rows && rows.length === 0 && (
        <p className="muted" data-testid="cycles-empty">
          No cycles yet. Send a channel message above: each message runs one cycle, and it shows up here as it runs.
        </p>
      )}
      {rows && rows.length > 0 && (
        <ol className="cycle-list" aria-label="Cycles, newest first">
          {rows.map((c) => (
            <CycleCard key={c.id} cycle={c} now={now} />
          ))}
        </ol>
      )}
    </Section>
  );
}

function CycleCard(props: { cycle: CycleRow; now: number }) {
  const c = props.cycle;
  const status = CYCLE_STATUS[c.status];
  const at = c.finished_at ?? c.started_at ?? c.created_at;
  const forwarded = c.gate?.forwarded === true;
  return (
    <li className={`card cycle-card${forwarded ? ' cycle-forwarded' : ''}`} data-testid="cycle-row" data-seq={c.seq} data-status={c.status}>
      <header className="cycle-head">
        <h3>
          Cycle {c.seq} <span className="muted cycle-channel">on {c.channel}</span>
        </h3>
        <span className="state">
          <Dot color={status.color} pulse={status.pulse} /> {status.label}
          <span className="muted" title={fullTime(at)}>
            · {relativeTime(at, props.now)}
          </span>
        </span>
      </header>
      <p className="cycle-message">“{c.text}”</p>

      {c.path.length > 0 && (
        <ol className="cycle-path" aria-label="Path through the graph" data-testid="cycle-path">
          {pathOf(c).map((node, i) => (
            <li key={i} className="path-step">
              <span className={`path-node${node === 'subconscious_eval' ? ' path-subconscious' : ''}${node === 'END' ? ' path-end' : ''}`} title={node}>
                {node === 'END' ? 'end' : NODE_LABELS[node]}
              </span>
            </li>
          ))}
        </ol>
      )}
      {c.status === 'queued' && <p className="small muted">Waiting for the cycle before it to finish.</p>}
      {c.status === 'running' && c.path.length === 0 && <p className="small muted">Running through the graph…</p>}
      {c.status === 'failed' && (
        <p className="coral small" data-testid="cycle-error">
          Failed, and the harness state was left as it was before: <MessageText text={c.error ?? 'no reason given'} />
        </p>
      )}

      {c.status === 'done' && (
        <dl className="cycle-facts">
          {c.gate && (
            <div>
              <dt>Gate</dt>
              <dd data-testid="cycle-gate" data-forwarded={c.gate.forwarded}>
                {gateSentence(c.gate)}
                {c.escalation && <span className="block muted">Flagged: {c.escalation}</span>}
              </dd>
            </div>
          )}
          <div>
            <dt>Steered by</dt>
            <dd data-testid="cycle-directive">{c.directive ? <q>{c.directive.text}</q> : <span className="muted">no directive (the default line)</span>}</dd>
          </div>
          {c.evictions.length > 0 && (
            <div>
              <dt>Evicted</dt>
              <dd data-testid="cycle-evictions">
                {plural(c.evictions.length, 'trace')} moved to long-term memory to free context: {c.evictions.map((e) => e.title).join('; ')}
              </dd>
            </div>
          )}
          {c.world_diff.length > 0 && (
            <div>
              <dt>World diff</dt>
              <dd>
                <ul className="world-diff" data-testid="cycle-diff">
                  {c.world_diff.map((d) => (
                    <li key={`${d.seq}.${d.index}`}>
                      <span className="diff-mutation">{d.mutation}</span> <span className="muted diff-delta">{delta(d.delta)}</span>
                      {d.critical && <span className="badge diff-critical">critical</span>}
                    </li>
                  ))}
                </ul>
              </dd>
            </div>
          )}
          {c.response && (
            <div>
              <dt>{c.mode === 'offline' ? 'Stand-in answer' : 'Answer'}</dt>
              <dd className="cycle-response" data-testid="cycle-response" data-mode={c.mode}>
                {c.mode === 'offline' && (
                  <span className="badge badge-offline" data-testid="cycle-stand-in">
                    offline stand-in, not a model’s reply
                  </span>
                )}{' '}
                {c.response}
              </dd>
            </div>
          )}
        </dl>
      )}
      {c.event_log.length > 0 && (
        <details className="cycle-details">
          <summary>Event log{c.compressed ? ' and compressed history' : ''}</summary>
          <ol className="event-log">
            {c.event_log.map((l, i) => (
              <li key={i}>{l}</li>
            ))}
          </ol>
          {c.compressed && (
            <p className="small">
              Compressed for the steering world: {c.compressed.input_tokens} → {c.compressed.summary_tokens} tokens (budget {c.compressed.budget_tokens}
              {c.compressed.truncated ? ', cut to fit' : ''}): <q>{c.compressed.summary}</q>
            </p>
          )}
        </details>
      )}
    </li>
  );
}
