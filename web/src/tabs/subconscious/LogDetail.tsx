/**
 * One log row's detail (`subconscious.log_detail`): the model's decision and reason, the
 * situation report exactly as it was sent, the model's raw answer, how the task was carried out
 * (the answer, each tool call with its arguments and result), tokens, latency and model as the
 * ledger recorded them, and the approval trail — who approved or skipped what, and when.
 * Everything a model or a tool wrote is shown as plain text in a box (never as markup), and the
 * daemon has capped it.
 */
import { useEffect, useState } from 'react';
import type { ExecutionDetail, LogDetail, ModelCalls } from '../../../../src/protocol/index.js';
import { call, explain } from '../../api/rpc.js';
import { clockTime, count, duration, fullTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { purposeWords } from '../../ui/purpose-words.js';
import { answeredHow } from '../../shell/inbox/answered.js';
import { DECISION_LOOK, MODE_WORDS, reasonOf } from './decisions.js';

export function LogDetailPanel(props: { id: string; logId: string }) {
  const [state, setState] = useState<{ detail?: LogDetail; error?: string }>({});
  useEffect(() => {
    let live = true;
    call('subconscious.log_detail', { id: props.logId }).then(
      (detail) => live && setState({ detail }),
      (err: unknown) => live && setState({ error: explain(err) }),
    );
    return () => {
      live = false;
    };
  }, [props.logId]);
  const d = state.detail;
  return (
    <div id={props.id} className="log-detail" data-testid="log-detail" aria-live="polite">
      {!d && !state.error && <p className="muted small">Loading the details…</p>}
      {state.error && (
        <p className="coral small">
          <MessageText text={state.error} />
        </p>
      )}
      {d && <Detail d={d} />}
    </div>
  );
}

function Detail(props: { d: LogDetail }) {
  const { d } = props;
  const e = d.entry;
  const reason = reasonOf(e);
  return (
    <div className="detail-sections">
      <section aria-label="Decision" data-testid="detail-decision">
        <h4>Decision</h4>
        <p className="small">
          {e.model_decision ? (
            <>
              The model decided <strong>{e.model_decision === 'noop' ? 'nothing new' : e.model_decision === 'act' ? 'act' : 'hand it to the agent'}</strong>
              {reason ? (
                <>
                  : <MessageText text={reason} />
                </>
              ) : (
                ' (it gave no reason).'
              )}
            </>
          ) : (
            `${DECISION_LOOK[e.decision]?.label ?? e.decision} — no evaluation decided this row.`
          )}
        </p>
        {d.tick && (
          <p className="small muted">
            Tick at <span title={fullTime(d.tick.tick_at)}>{clockTime(d.tick.tick_at)}</span> with {count(d.tick.tasks)} {d.tick.tasks === 1 ? 'task' : 'tasks'}
            {d.tick.duration_ms ? `, ${duration(d.tick.duration_ms)}` : ''}.{d.task === null ? ' The task has been removed since.' : ''}
          </p>
        )}
      </section>
      {d.evaluation && (
        <section aria-label="The evaluation" data-testid="detail-evaluation">
          <h4>The evaluation</h4>
          <Figures calls={d.evaluation} purpose="evaluate" extra={`${count(d.evaluation.tasks_in_call)} tasks in this call`} />
          <details>
            <summary>The model’s raw answer</summary>
            <pre className="detail-text" data-testid="detail-raw-answer">
              {d.evaluation.raw_answer ?? '(not kept)'}
            </pre>
          </details>
        </section>
      )}
      {d.report !== null && (
        <section aria-label="The situation report" data-testid="detail-report">
          <h4>What the model was told</h4>
          <details>
            <summary>The situation report as sent{d.report_tokens !== null ? ` (about ${count(d.report_tokens)} tokens)` : ''}</summary>
            <pre className="detail-text" data-testid="detail-report-text">
              {d.report}
            </pre>
          </details>
        </section>
      )}
      {d.execution && <Execution title="How it was carried out" x={d.execution} testid="detail-execution" />}
      {d.approved_action && <Execution title="The action you approved" x={d.approved_action} testid="detail-approved" />}
      <section aria-label="Approval trail" data-testid="detail-approvals">
        <h4>Approvals</h4>
        {d.approvals.length === 0 ? (
          <p className="small muted">Nothing here needed an approval.</p>
        ) : (
          <ol className="detail-trail">
            {d.approvals.map((a, i) => (
              <li key={i} className="small" data-state={a.state} data-by={a.by ?? ''} data-via={a.answered_via ?? ''}>
                <time title={fullTime(a.at)}>{clockTime(a.at)}</time> ·{' '}
                <strong>{trailWords(a.state, a.answered_via && a.answered_via !== 'page' ? null : a.by)}</strong>
                {a.answered_via ? <span data-testid="detail-answered-how">{` ${answeredHow(a.answered_via, a.answered_by ?? null)}`}</span> : null}:{' '}
                <code className="detail-inline">{a.what}</code>
                {a.note ? (
                  <>
                    {' '}
                    — <MessageText text={a.note} />
                  </>
                ) : null}
              </li>
            ))}
          </ol>
        )}
      </section>
    </div>
  );
}

function trailWords(state: string, by: 'you' | 'subconscious' | null): string {
  const who = by === 'you' ? 'you' : by === 'subconscious' ? 'subconscious' : null;
  switch (state) {
    case 'approved':
      return who ? `approved by ${who}` : 'approved';
    case 'dismissed':
      return who ? `skipped by ${who}` : 'skipped';
    case 'denied':
      return who ? `denied by ${who}` : 'denied';
    case 'resolved':
      return 'resolved by itself';
    case 'expired':
      return 'expired';
    default:
      return 'waiting for you';
  }
}

function Figures(props: { calls: ModelCalls; purpose: string; extra?: string }) {
  const c = props.calls;
  return (
    <p className="small detail-figures" data-testid="detail-figures">
      {purposeWords(props.purpose)} · model {c.model ?? 'unknown'} · {count(c.calls)} {c.calls === 1 ? 'call' : 'calls'} · {count(c.input_tokens)} tokens in,{' '}
      {count(c.output_tokens)} out{c.latency_ms ? ` · ${duration(c.latency_ms)}` : ''}
      {props.extra ? ` · ${props.extra}` : ''}
    </p>
  );
}

function Execution(props: { title: string; x: ExecutionDetail; testid: string }) {
  const { x } = props;
  return (
    <section aria-label={props.title} data-testid={props.testid}>
      <h4>{props.title}</h4>
      <p className="small">{MODE_WORDS[x.mode] ?? x.mode}.</p>
      {x.taken_over_from && (
        <p
          className="small muted"
          data-testid="detail-taken-over"
          title="Its worker stopped during the run; another worker (or this one after a restart) took it over and continued it from its checkpoint."
        >
          taken over from {x.taken_over_from}
        </p>
      )}
      <Figures calls={x.calls} purpose={x.purpose} />
      {x.tool_calls.length > 0 && (
        <ol className="detail-tools" data-testid="detail-tool-calls">
          {x.tool_calls.map((t, i) => (
            <li key={i} data-outcome={t.outcome}>
              <p className="small">
                <code className="detail-inline">{t.tool}</code> · {t.outcome === 'ok' ? 'ran' : t.outcome} ·{' '}
                <time title={fullTime(t.at)}>{clockTime(t.at)}</time>
                {t.truncated ? ' · shortened' : ''}
              </p>
              <details>
                <summary>Arguments and result</summary>
                <pre className="detail-text" data-testid="detail-tool-arguments">
                  {t.arguments}
                </pre>
                <pre className="detail-text" data-testid="detail-tool-result">
                  {t.result}
                </pre>
              </details>
            </li>
          ))}
        </ol>
      )}
      {x.answer !== null && (
        <details>
          <summary>The answer as given</summary>
          <pre className="detail-text" data-testid="detail-answer">
            {x.answer}
          </pre>
        </details>
      )}
    </section>
  );
}
