/**
 * The heartbeat's cost beside an interval heartbeat of the same bots (issue 12 §10): the tokens its
 * pulses and resumes really used, and what one full model call per bot every 30 minutes would have
 * cost at the average prompt size measured from the bots' own runs — as a ratio, with one line
 * saying how it is computed (`bots.heartbeat_usage`). Nothing shows without bots, or when the
 * daemon runs no heartbeat.
 */
import { useState } from 'react';
import type { HeartbeatUsage as Usage } from '../../../../src/protocol/heartbeat.js';
import { METHOD_NOT_FOUND, RpcError, explain } from '../../api/rpc.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { count, everyWords } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import '../bots/heartbeat.css';

/** The viewer's own calendar days, as the rest of the tab. */
const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const PERIODS = { 1: 'Today', 7: 'Last 7 days', 14: 'Last 14 days' } as const;
type Period = keyof typeof PERIODS;
/** Pulses and resumes are logged; resumes settle as tasks; bots come and go. */
const EVENTS = ['heartbeat.log_added', 'bots.task_changed', 'bots.bot_changed'] as const;

/** 0.0123 → "1.2 %", with a "× fewer" a person can picture. */
export function ratioText(ratio: number): { share: string; compare: string } {
  const pct = ratio * 100;
  const share = pct === 0 ? '0 %' : pct < 0.1 ? '< 0.1 %' : pct < 10 ? `${pct.toFixed(1)} %` : `${Math.round(pct)} %`;
  if (ratio === 0) return { share, compare: 'no tokens at all' };
  if (ratio < 1) return { share, compare: `${count(Math.round(1 / ratio))}× fewer tokens` };
  return { share, compare: `${(Math.round(ratio * 10) / 10).toString()}× the tokens` };
}

export function HeartbeatUsage() {
  const [days, setDays] = useState<Period>(1);
  const usage = useLiveRpc('bots.heartbeat_usage', { days, timezone: TIME_ZONE }, EVENTS);
  const u = usage.data;
  if (usage.error instanceof RpcError && usage.error.rpcCode === METHOD_NOT_FOUND) return null;
  if (!u) {
    return usage.error ? (
      <p className="coral small" role="alert">
        The heartbeat’s cost could not be read: <MessageText text={explain(usage.error)} />
      </p>
    ) : null;
  }
  if (u.bots === 0) return null;
  return (
    <Section
      id="usage-heartbeat"
      title="Heartbeat against an interval heartbeat"
      actions={
        <label className="choice">
          <span>Period</span>{' '}
          <select value={days} aria-label="Period" onChange={(e) => setDays(Number(e.target.value) as Period)}>
            {(Object.keys(PERIODS) as unknown as Period[]).map((d) => (
              <option key={d} value={d}>
                {PERIODS[d]}
              </option>
            ))}
          </select>
        </label>
      }
    >
      <Figures u={u} />
      <Bars u={u} />
      <p className="muted small hb-usage-how" data-testid="usage-heartbeat-how">
        How it is computed: an interval heartbeat calls each bot’s model once every {u.interval.minutes} minutes whether or not anything is unfinished —{' '}
        {count(u.bots)} bot{u.bots === 1 ? '' : 's'} over this period is {count(u.interval.calls)} calls,{' '}
        {u.measured_prompt_tokens === null
          ? 'which cannot be priced yet: no bot has finished a full call in this period to measure a prompt’s size'
          : `each priced at the average prompt of a full bot call measured here (${count(u.measured_prompt_tokens)} tokens, over ${count(u.full_calls_measured)} call${u.full_calls_measured === 1 ? '' : 's'})`}
        . The heartbeat’s figure is what its pulses and resumes really used, input and output.
      </p>
    </Section>
  );
}

function Figures(props: { u: Usage }) {
  const { u } = props;
  const ratio = u.ratio === null ? null : ratioText(u.ratio);
  return (
    <dl className="figures hb-usage-figures" data-testid="usage-heartbeat-figures">
      <div>
        <dt>Heartbeat tokens</dt>
        <dd data-testid="usage-heartbeat-tokens">{count(u.heartbeat_tokens)}</dd>
        <dd className="hb-usage-sub">
          {count(u.pulses.calls)} pulse{u.pulses.calls === 1 ? '' : 's'}, {count(u.resumes.runs)} resume{u.resumes.runs === 1 ? '' : 's'}
        </dd>
      </div>
      <div>
        <dt>Interval heartbeat</dt>
        <dd data-testid="usage-heartbeat-interval">{u.interval.tokens === null ? 'not measured yet' : count(u.interval.tokens)}</dd>
        <dd className="hb-usage-sub">
          {count(u.interval.calls)} full calls, one per bot {everyWords(u.interval.minutes)}
        </dd>
      </div>
      <div>
        <dt>Ratio</dt>
        <dd data-testid="usage-heartbeat-ratio" className={ratio && u.ratio! < 1 ? 'hb-usage-ratio' : undefined}>
          {ratio ? ratio.share : '—'}
        </dd>
        <dd className="hb-usage-sub">{ratio ? ratio.compare : 'once a full call is measured'}</dd>
      </div>
    </dl>
  );
}

/** Two bars on one scale; the smaller never vanishes (2 px), its number is beside it anyway. */
function Bars(props: { u: Usage }) {
  const { u } = props;
  if (u.interval.tokens === null) return null;
  const max = Math.max(u.heartbeat_tokens, u.interval.tokens, 1);
  const rows = [
    { label: 'Heartbeat', value: u.heartbeat_tokens, cls: '' },
    { label: `Interval, ${everyWords(u.interval.minutes)}`, value: u.interval.tokens, cls: ' hb-usage-interval' },
  ];
  return (
    <div className="hb-usage-bars" aria-hidden="true">
      {rows.map((r) => (
        <div key={r.label} className="hb-usage-bar">
          <span>
            {r.label}: {count(r.value)}
          </span>
          <span className="hb-usage-track">
            <span className={`hb-usage-fill${r.cls}`} style={{ width: `${(r.value / max) * 100}%` }} />
          </span>
        </div>
      ))}
    </div>
  );
}
