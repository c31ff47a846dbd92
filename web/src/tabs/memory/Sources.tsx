/**
 * The namespaces memory holds (one per connected source) with their document counts and last
 * sync, joined with the configured folder sources (path, watcher, skipped files, Sync now).
 */
import { useState } from 'react';
import { call, explain } from '../../api/rpc.js';
import type { MemoryNamespace, MemorySourceStatus } from '../../../../src/protocol/index.js';
import { useShell } from '../../shell/context.js';
import { useNow } from '../../shell/hooks.js';
import type { Resource } from '../../shell/resource.js';
import { Dot } from '../../ui/Dot.js';
import { count, fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import { ConnectSource } from './ConnectSource.js';

export function Sources(props: { namespaces: Resource<MemoryNamespace[]>; sources: Resource<MemorySourceStatus[]> }) {
  const { namespaces, sources } = props;
  const list = namespaces.data;
  const configured = new Map((sources.data ?? []).map((s) => [s.namespace, s]));
  return (
    <Section id="memory-sources" title="Sources" count={list?.length}>
      {!list && <p className="muted">{namespaces.error ? `Memory could not be read: ${explain(namespaces.error)}` : 'Reading memory…'}</p>}
      {list && list.length === 0 && (
        <div className="memory-empty" data-testid="memory-empty">
          <p>
            <strong>Memory is empty.</strong> Connected sources fill it; the conscious loop turns it into actionables and the memory world tells you what
            changed.
          </p>
          <ConnectSource />
        </div>
      )}
      {list && list.length > 0 && (
        <ul className="source-list">
          {list.map((ns) => (
            <SourceRow key={ns.namespace} ns={ns} source={configured.get(ns.namespace)} reload={() => void sources.reload()} />
          ))}
        </ul>
      )}
      {list && list.length > 0 && (
        <details className="connect-more">
          <summary>Connect another source</summary>
          <ConnectSource />
        </details>
      )}
    </Section>
  );
}

function SourceRow(props: { ns: MemoryNamespace; source: MemorySourceStatus | undefined; reload: () => void }) {
  const { ns, source } = props;
  const { notify } = useShell();
  const now = useNow(30_000);
  const [busy, setBusy] = useState(false);
  const syncing = busy || source?.syncing === true;
  const failed = ns.last_error !== null;
  const sync = async () => {
    setBusy(true);
    try {
      await call('memory.sync', { namespace: ns.namespace });
      notify(`Syncing ${ns.label}…`, 'info');
    } catch (err) {
      notify(`Could not sync ${ns.label}: ${explain(err)}`, 'error');
    } finally {
      setBusy(false);
      props.reload();
    }
  };
  return (
    <li className="card source-row" data-testid="memory-source" data-namespace={ns.namespace}>
      <div className="source-head">
        <h3>
          <Dot color={syncing ? 'blue' : failed ? 'coral' : 'green'} pulse={syncing} />
          <span>{ns.label}</span>
        </h3>
        <span className="badge badge-quiet">{ns.kind}</span>
      </div>
      <dl className="source-facts">
        <div>
          <dt>Documents</dt>
          <dd data-testid="source-documents">{count(ns.documents)}</dd>
        </div>
        <div>
          <dt>Last sync</dt>
          <dd title={fullTime(ns.last_sync_at)}>
            {syncing ? 'syncing now…' : ns.last_sync_at === null ? 'never (pushed over RPC)' : relativeTime(ns.last_sync_at, now)}
          </dd>
        </div>
        <div>
          <dt>Last change</dt>
          <dd title={fullTime(ns.last_change_at)}>{relativeTime(ns.last_change_at, now)}</dd>
        </div>
        <div>
          <dt>Namespace</dt>
          <dd>
            <code>{ns.namespace}</code>
          </dd>
        </div>
      </dl>
      {source && (
        <p className="muted small source-path">
          <code>{source.path}</code> — {source.watching ? 'watched for changes' : 'not watched'}, full sync every {source.sync_interval_minutes} min
        </p>
      )}
      {failed && (
        <p className="coral small" role="alert">
          Last sync failed: <MessageText text={ns.last_error!} />
        </p>
      )}
      {source && source.skipped_total > 0 && (
        <details className="skipped">
          <summary>
            {count(source.skipped_total)} file{source.skipped_total === 1 ? '' : 's'} skipped
          </summary>
          <ul>
            {source.skipped.map((f) => (
              <li key={f.path}>
                <code>{f.path}</code>: {f.reason}
              </li>
            ))}
          </ul>
          {source.skipped_total > source.skipped.length && <p className="muted small">…and {count(source.skipped_total - source.skipped.length)} more.</p>}
        </details>
      )}
      {source && (
        <div className="source-actions">
          <button type="button" onClick={() => void sync()} disabled={syncing} aria-label={`Sync ${ns.label} now`}>
            {syncing ? 'Syncing…' : 'Sync now'}
          </button>
        </div>
      )}
    </li>
  );
}
