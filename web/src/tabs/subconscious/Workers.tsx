/**
 * The cluster's workers (issue 17 §5): each process with its role, host, pid, last seen, jobs
 * held and whether it is alive; queues with work in them; and the dead letters — jobs moved
 * aside with their reason, so a bad row is seen instead of silently skipped. A worker dying sends
 * no event, so the status is read again every 10 s while this shows.
 */
import { useEffect } from 'react';
import type { ClusterStatus } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import { Dot } from '../../ui/Dot.js';
import { count, fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';

const REFRESH_MS = 10_000;

export function Workers(props: { cluster: ClusterStatus | undefined }) {
  const { status } = useShell();
  const now = useNow(REFRESH_MS);
  const { reload } = status;
  useEffect(() => {
    const timer = setInterval(() => void reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
  const cluster = props.cluster;
  if (!cluster) return null;
  const alive = cluster.workers.filter((w) => w.alive).length;
  const busy = cluster.queues.filter((q) => q.queued + q.active + q.failed + q.dead > 0);
  return (
    <Section id="workers" title="Workers" count={cluster.workers.length}>
      <p className="muted" data-testid="workers-summary">
        {count(alive)} of {count(cluster.workers.length)} alive on {cluster.store === 'postgres' ? 'Postgres (shared by every worker)' : 'SQLite (one process)'}
        ; a worker that stops is taken over from within {Math.round((2 * cluster.lease_ms) / 1000)} s.
      </p>
      <div className="table-wrap">
        <table className="data-table" aria-label="Workers">
          <thead>
            <tr>
              <th scope="col">Worker</th>
              <th scope="col">Role</th>
              <th scope="col">Host / pid</th>
              <th scope="col">Last seen</th>
              <th scope="col" className="num">
                Jobs held
              </th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {cluster.workers.map((w) => (
              <tr key={w.id} data-testid="worker-row" data-alive={w.alive} data-role={w.role}>
                <th scope="row">{w.id}</th>
                <td>{w.role === 'face' ? 'face (HTTP)' : 'worker (no face)'}</td>
                <td>
                  {w.host} / {w.pid}
                </td>
                <td title={fullTime(w.last_seen_at)}>{relativeTime(w.last_seen_at, now)}</td>
                <td className="num">{count(w.jobs_held)}</td>
                <td>
                  <Dot color={w.alive ? 'green' : 'gray'} /> {w.alive ? 'Alive' : 'Not alive'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {busy.length > 0 && (
        <p className="muted" data-testid="queue-sizes">
          Queues:{' '}
          {busy
            .map(
              (q) => `${q.queue} — ${q.queued} queued, ${q.active} active${q.failed ? `, ${q.failed} failed` : ''}${q.dead ? `, ${q.dead} moved aside` : ''}`,
            )
            .join('; ')}
        </p>
      )}
      {cluster.dead_letters.length > 0 && (
        <div className="table-wrap" data-testid="dead-letters">
          <table className="data-table">
            <caption>Moved aside (dead letters): jobs that cannot run, with why; everything else goes on</caption>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Job</th>
                <th scope="col">Reason</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {cluster.dead_letters.map((d) => (
                <tr key={d.id} data-testid="dead-letter-row">
                  <td>{d.queue}</td>
                  <td>{d.key ?? d.id}</td>
                  <td className="coral">{d.reason}</td>
                  <td title={fullTime(d.moved_at ?? d.created_at)}>{relativeTime(d.moved_at ?? d.created_at, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}
