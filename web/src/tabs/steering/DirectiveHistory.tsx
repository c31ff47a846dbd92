/** Every directive the steering world wrote, newest first, with the cycles it steered and whether it still does. */
import type { SteeringDirective } from '../../../../src/protocol/index.js';
import { explain } from '../../api/rpc.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { DIRECTIVE_STATUS, directiveWindow, remainingSentence } from './words.js';

export function DirectiveHistory(props: { history: Resource<SteeringDirective[]> }) {
  const now = useNow(30_000);
  const rows = props.history.data;
  return (
    <Section id="steering-history" title="Directive history" count={rows?.length}>
      {!rows && (
        <p className={props.history.error ? 'coral' : 'muted'}>
          {props.history.error ? <MessageText text={`The history could not be read: ${explain(props.history.error)}`} /> : 'Reading the history…'}
        </p>
      )}
      {rows && rows.length === 0 && (
        <p className="muted" data-testid="history-empty">
          No directive yet. The steering world writes one when a review of forwarded cycles finds something worth steering; most reviews find nothing.
        </p>
      )}
      {rows && rows.length > 0 && (
        <ol className="directive-list" aria-label="Directives, newest first">
          {rows.map((d) => (
            <li key={d.id} className={`card directive-row directive-${d.status}`} data-testid="directive-row" data-status={d.status}>
              <div className="directive-row-head">
                <span className={`badge${d.status === 'active' ? '' : ' badge-quiet'}`}>{DIRECTIVE_STATUS[d.status]}</span>
                <span className="small muted">
                  steers {directiveWindow(d)} · {remainingSentence(d)} · <span title={fullTime(d.created_at)}>{relativeTime(d.created_at, now)}</span>
                </span>
              </div>
              <p className="directive-row-text">{d.text}</p>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
