/**
 * What changed in memory since the memory world's baseline: the totals, then per source what was
 * added, modified and removed (at most ten each, "…and K more"). The memory world reviews exactly
 * this on its next tick, and moves its baseline when it did.
 */
import type { DiffChange, MemoryDiffResult } from '../../../../src/protocol/index.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { count, fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';

const CHANGE_LABEL: Record<DiffChange, string> = { added: 'added', modified: 'changed', removed: 'removed' };

export function Changes(props: { diff: Resource<MemoryDiffResult> }) {
  const now = useNow(30_000);
  const d = props.diff.data;
  const total = d ? d.totals.added + d.totals.modified + d.totals.removed : 0;
  return (
    <Section id="memory-changes" title="Changed since the last review" count={d?.baseline ? total : undefined}>
      {!d && <p className="muted">{props.diff.error ? 'The changes could not be read.' : 'Reading the changes…'}</p>}
      {d && !d.baseline && (
        <p className="muted" data-testid="changes-no-baseline">
          No review yet: the memory world takes its first look a minute after the daemon starts, and reviews what changes after that.
        </p>
      )}
      {d?.baseline && (
        <p className="muted small" data-testid="changes-totals">
          Since the review <time title={fullTime(d.baseline.created_at)}>{relativeTime(d.baseline.created_at, now)}</time>:{' '}
          {total === 0 ? 'nothing changed.' : `${count(d.totals.added)} added, ${count(d.totals.modified)} changed, ${count(d.totals.removed)} removed.`}
        </p>
      )}
      {d?.sources.map((s) => (
        <div key={s.namespace} className="change-source" data-testid="change-source" data-namespace={s.namespace}>
          <h3>
            {s.label} <span className="badge badge-quiet">{s.kind}</span>
          </h3>
          <ul className="change-list">
            {s.entries.map((e) => (
              <li key={`${e.change}:${e.external_id}`} data-change={e.change}>
                <span className={`badge change-${e.change}`}>{CHANGE_LABEL[e.change]}</span> <span className="change-title">{e.title}</span>
              </li>
            ))}
          </ul>
          {s.more > 0 && <p className="muted small">…and {count(s.more)} more.</p>}
        </div>
      ))}
    </Section>
  );
}
