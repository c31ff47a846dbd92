/**
 * Stacked bars, one per day (the viewer's calendar day), one segment per world (or purpose).
 * Hand-drawn SVG: it scales with its box, every segment has a tooltip, and the same numbers are
 * in the tables below.
 */
import type { UsageSummary } from '../../api/types.js';
import { useWidth } from '../../shell/hooks.js';
import { compact, count } from '../../ui/format.js';
import { purposeWords } from '../../ui/purpose-words.js';
import { GROUP_LABEL, METRIC_LABEL, value, type GroupBy, type Metric } from './metrics.js';
import { colorFor } from './palette.js';

const H = 240;
const PAD = { top: 12, right: 8, bottom: 30, left: 44 };
/** Room each x-axis date label needs, in pixels. */
const LABEL_PX = 44;

export function UsageChart(props: { summary: UsageSummary; metric: Metric; groupBy: GroupBy }) {
  const { summary, metric, groupBy } = props;
  // Drawn at the box's real width so text keeps its size on a phone and on a desktop.
  const [boxRef, boxWidth] = useWidth<HTMLDivElement>(720);
  const W = Math.max(280, boxWidth);
  const keys = groupBy === 'by_world' ? summary.worlds : summary.purposes;
  const name = (k: string) => (groupBy === 'by_purpose' ? purposeWords(k) : k);
  const days = summary.per_day;
  const dayTotals = days.map((d) => d[groupBy].reduce((a, g) => a + value(g, metric), 0));
  const drawnTotal = dayTotals.reduce((a, b) => a + b, 0);
  const step = niceStep(Math.max(0, ...dayTotals) / 4);
  const max = step * 4;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(4, slot * 0.66);
  const y = (v: number) => PAD.top + plotH - (max === 0 ? 0 : (v / max) * plotH);
  const ticks = [0, 1, 2, 3, 4].map((i) => i * step);
  const labelEvery = Math.max(1, Math.ceil(LABEL_PX / slot));
  const label = `${METRIC_LABEL[metric]} per day for the last ${summary.days} days, ${GROUP_LABEL[groupBy].toLowerCase()}: ${count(drawnTotal)} in total.`;

  return (
    <figure className="chart">
      <div ref={boxRef} className="chart-box">
        <svg
          viewBox={`0 0 ${W} ${H}`}
          role="img"
          aria-label={label}
          data-testid="usage-chart"
          data-metric={metric}
          data-drawn-total={drawnTotal}
          width={W}
          height={H}
        >
          {ticks.map((t, i) => (
            <g key={i} className="chart-grid">
              <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} />
              <text x={PAD.left - 6} y={y(t)} dy="0.32em" textAnchor="end">
                {compact(t)}
              </text>
            </g>
          ))}
          {days.map((d, i) => {
            const x = PAD.left + i * slot + (slot - barW) / 2;
            let acc = 0;
            const segments = keys
              .map((k) => ({ key: k, v: value(d[groupBy].find((g) => g.key === k) ?? { calls: 0, input_tokens: 0, output_tokens: 0 }, metric) }))
              .filter((s) => s.v > 0);
            const isToday = i === days.length - 1;
            return (
              <g key={d.date} data-testid="chart-day" data-date={d.date} data-total={dayTotals[i]}>
                {segments.map((s) => {
                  const top = y(acc + s.v);
                  const bottom = y(acc);
                  acc += s.v;
                  return (
                    <rect key={s.key} x={x} y={top} width={barW} height={Math.max(0.5, bottom - top)} fill={colorFor(keys, s.key)} rx={1.5}>
                      <title>{`${d.date} · ${name(s.key)}: ${count(s.v)} ${METRIC_LABEL[metric].toLowerCase()}`}</title>
                    </rect>
                  );
                })}
                {(days.length - 1 - i) % labelEvery === 0 && (
                  <text className={`chart-x${isToday ? ' chart-today' : ''}`} x={x + barW / 2} y={H - PAD.bottom + 16} textAnchor="middle">
                    {isToday ? 'today' : d.date.slice(5)}
                  </text>
                )}
              </g>
            );
          })}
          <line className="chart-axis" x1={PAD.left} x2={W - PAD.right} y1={y(0)} y2={y(0)} />
        </svg>
      </div>
      <figcaption>
        <ul className="legend" aria-label="Legend">
          <li className="legend-title">
            {METRIC_LABEL[metric]}, {GROUP_LABEL[groupBy].toLowerCase()}:
          </li>
          {keys.map((k) => {
            const total = summary.totals[groupBy].find((g) => g.key === k);
            return (
              <li key={k} data-testid="legend-item" data-key={k}>
                <span className="swatch" style={{ background: colorFor(keys, k) }} aria-hidden="true" />
                {name(k)} <span className="muted">{count(total ? value(total, metric) : 0)}</span>
              </li>
            );
          })}
          {keys.length === 0 && <li className="muted">No model calls in this period.</li>}
        </ul>
      </figcaption>
    </figure>
  );
}

/** A round whole-number gridline step at least `v` (four steps span the axis). */
function niceStep(v: number): number {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of p >= 10 ? [1, 2, 2.5, 5, 10] : [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
