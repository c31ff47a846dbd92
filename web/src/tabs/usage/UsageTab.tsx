/**
 * The Usage tab: model calls and tokens from the ledger — today, per day for 14 days (chart),
 * by world and by purpose (tables), and every call with its latency and outcome (paged).
 */
import { Fragment, useState } from 'react';
import type { UsageDay, UsageGroup } from '../../api/types.js';
import { useLiveRpc } from '../../shell/hooks.js';
import { count } from '../../ui/format.js';
import { purposeWords } from '../../ui/purpose-words.js';
import { Section } from '../../ui/Section.js';
import { CallsTable } from './CallsTable.js';
import { HeartbeatUsage } from './HeartbeatUsage.js';
import { GROUP_LABEL, METRIC_LABEL, USAGE_EVENTS, type GroupBy, type Metric } from './metrics.js';
import { UsageChart } from './UsageChart.js';

const DAYS = 14;
/** Days on this tab are the viewer's own calendar days. */
const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

export function UsageTab() {
  const summary = useLiveRpc('usage.summary', { days: DAYS, timezone: TIME_ZONE }, USAGE_EVENTS);
  const [metric, setMetric] = useState<Metric>('input_tokens');
  const [groupBy, setGroupBy] = useState<GroupBy>('by_world');
  const s = summary.data;
  return (
    <div className="usage">
      {!s && <p className="muted">{summary.error ? 'Usage could not be read.' : 'Reading the ledger…'}</p>}
      {s && (
        <>
          <Section id="usage-today" title={`Today (${s.today.date}, ${s.timezone})`}>
            <Figures day={s.today} testid="usage-today-figures" />
          </Section>
          <Section
            id="usage-days"
            title={`Last ${s.days} days`}
            actions={
              <div className="chart-controls">
                <Choice label="Show" value={metric} options={METRIC_LABEL} onChange={setMetric} />
                <Choice label="Split" value={groupBy} options={GROUP_LABEL} onChange={setGroupBy} />
              </div>
            }
          >
            <Figures day={s.totals} testid="usage-total-figures" />
            <UsageChart summary={s} metric={metric} groupBy={groupBy} />
            <div className="usage-tables">
              <GroupTable caption="By world" groups={s.totals.by_world} today={s.today.by_world} testid="usage-by-world" />
              <GroupTable caption="By purpose" groups={s.totals.by_purpose} today={s.today.by_purpose} testid="usage-by-purpose" words={purposeWords} />
            </div>
          </Section>
        </>
      )}
      <HeartbeatUsage />
      <CallsTable worlds={s?.worlds ?? []} />
    </div>
  );
}

function Figures(props: { day: Pick<UsageDay, 'calls' | 'input_tokens' | 'output_tokens' | 'failed'>; testid: string }) {
  const d = props.day;
  return (
    <dl className="figures" data-testid={props.testid}>
      <div>
        <dt>Calls</dt>
        <dd data-testid="figure-calls">{count(d.calls)}</dd>
      </div>
      <div>
        <dt>Input tokens</dt>
        <dd data-testid="figure-input">{count(d.input_tokens)}</dd>
      </div>
      <div>
        <dt>Output tokens</dt>
        <dd data-testid="figure-output">{count(d.output_tokens)}</dd>
      </div>
      <div>
        <dt>Failed</dt>
        <dd data-testid="figure-failed" className={d.failed > 0 ? 'coral' : undefined}>
          {count(d.failed)}
        </dd>
      </div>
    </dl>
  );
}

function GroupTable(props: { caption: string; groups: UsageGroup[]; today: UsageGroup[]; testid: string; words?: (key: string) => string }) {
  return (
    <div className="table-wrap">
      <table className="data-table" data-testid={props.testid}>
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" className="num">
              Calls
            </th>
            <th scope="col" className="num">
              Input tokens
            </th>
            <th scope="col" className="num">
              Output tokens
            </th>
            <th scope="col" className="num">
              Calls today
            </th>
          </tr>
        </thead>
        <tbody>
          {props.groups.map((g) => (
            <tr key={g.key} data-key={g.key}>
              <th scope="row" title={props.words ? g.key : undefined}>
                {props.words ? props.words(g.key) : breakable(g.key)}
              </th>
              <td className="num">{count(g.calls)}</td>
              <td className="num">{count(g.input_tokens)}</td>
              <td className="num">{count(g.output_tokens)}</td>
              <td className="num">{count(props.today.find((t) => t.key === g.key)?.calls ?? 0)}</td>
            </tr>
          ))}
          {props.groups.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                No calls.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Names like `execute_analysis` may wrap after `_`, `.` or `-` on a phone, never inside a word. */
function breakable(name: string) {
  return name.split(/(?<=[_.-])/).map((part, i) => (
    <Fragment key={i}>
      {i > 0 && <wbr />}
      {part}
    </Fragment>
  ));
}

function Choice<K extends string>(props: { label: string; value: K; options: Record<K, string>; onChange: (v: K) => void }) {
  return (
    <label className="choice">
      <span>{props.label}</span>{' '}
      <select value={props.value} aria-label={props.label} onChange={(e) => props.onChange(e.target.value as K)}>
        {(Object.keys(props.options) as K[]).map((k) => (
          <option key={k} value={k}>
            {props.options[k]}
          </option>
        ))}
      </select>
    </label>
  );
}
