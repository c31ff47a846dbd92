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
import { AddSource } from './AddSource.js';
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
      <details className="connect-more" data-testid="add-source-section">
        <summary>Add a source (mail, calendar, folder, MCP server)</summary>
        <AddSource added={() => void Promise.all([sources.reload(), namespaces.reload()])} />
        {list && list.length > 0 && <ConnectSource />}
      </details>
    </Section>
  );
}

function SourceRow(props: { ns: MemoryNamespace; source: MemorySourceStatus | undefined; reload: () => void }) {
  const { ns, source } = props;
  const { notify } = useShell();
  const now = useNow(30_000);
  const [busy, setBusy] = useState(false);
  const [tested, setTested] = useState<string | null>(null);
  const [confirmRemove, setConfirmRemove] = useState(false);
  const syncing = busy || source?.syncing === true;
  const failed = ns.last_error !== null;
  const failure = source?.last_sync?.failure ?? null;
  /** One action: its RPC call, a notice saying what happened, then a reload. */
  const act = async (what: string, run: () => Promise<string>) => {
    setBusy(true);
    try {
      notify(await run(), 'info');
    } catch (err) {
      notify(`Could not ${what} ${ns.label}: ${explain(err)}`, 'error');
    } finally {
      setBusy(false);
      props.reload();
    }
  };
  const sync = () =>
    act('sync', async () => {
      await call('memory.sync', { namespace: ns.namespace });
      return `Syncing ${ns.label}…`;
    });
  const test = () =>
    act('test', async () => {
      const r = await call('memory.sources_test', { namespace: ns.namespace });
      setTested(r.message);
      return r.ok ? `${ns.label}: the connection works.` : `${ns.label}: ${r.failure!.kind} failed.`;
    });
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
      {source?.paused && (
        <p className="small" data-testid="source-paused">
          Paused: no syncs until you resume it; its documents stay.
        </p>
      )}
      {source?.progress && (
        <p className="small" data-testid="source-progress">
          {source.progress.part}: {count(source.progress.done)} of {count(source.progress.total)}
        </p>
      )}
      {failed && (
        <div className="coral small" role="alert" data-testid="source-error">
          <p>
            Last sync failed{failure ? ` (${failure.kind})` : ''}: <MessageText text={ns.last_error!} />
          </p>
          {failure && <p>What to do: {failure.hint}</p>}
          {source && source.next_sync_at !== null && (
            <p title={fullTime(source.next_sync_at)} data-testid="source-next-try">
              Next try {relativeTime(source.next_sync_at, now)} (failed {source.failures}× in a row).
            </p>
          )}
        </div>
      )}
      {tested && (
        <p className="small" data-testid="source-tested">
          {tested}
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
          <button type="button" onClick={() => void sync()} disabled={syncing || source.paused} aria-label={`Sync ${ns.label} now`}>
            {syncing ? 'Syncing…' : 'Sync now'}
          </button>
          <button type="button" onClick={() => void test()} disabled={busy} aria-label={`Test the connection of ${ns.label}`}>
            Test connection
          </button>
          <button
            type="button"
            onClick={() =>
              void act(
                source.paused ? 'resume' : 'pause',
                async () => (await call('memory.sources_pause', { namespace: ns.namespace, paused: !source.paused })).message,
              )
            }
            disabled={busy}
            aria-label={`${source.paused ? 'Resume' : 'Pause'} ${ns.label}`}
          >
            {source.paused ? 'Resume' : 'Pause'}
          </button>
          <button
            type="button"
            onClick={() => void act('resync', async () => (await call('memory.sources_resync', { namespace: ns.namespace })).message)}
            disabled={busy || source.paused}
            aria-label={`Read ${ns.label} again from the start`}
          >
            Resync
          </button>
          {source.origin === 'added' && !confirmRemove && (
            <button type="button" onClick={() => setConfirmRemove(true)} disabled={busy} aria-label={`Remove ${ns.label}`}>
              Remove…
            </button>
          )}
        </div>
      )}
      {source && confirmRemove && (
        <div className="source-remove" data-testid="source-remove">
          <p className="small">
            Remove {ns.label}? Its {count(source.documents)} documents are deleted (the memory world sees them as removals), unless you keep them as a plain
            namespace.
          </p>
          <button
            type="button"
            onClick={() => void act('remove', async () => (await call('memory.sources_remove', { namespace: ns.namespace })).message)}
            aria-label={`Remove ${ns.label} and delete its documents`}
          >
            Remove and delete documents
          </button>
          <button
            type="button"
            onClick={() => void act('remove', async () => (await call('memory.sources_remove', { namespace: ns.namespace, keep_documents: true })).message)}
            aria-label={`Remove ${ns.label} and keep its documents`}
          >
            Remove, keep documents
          </button>
          <button type="button" onClick={() => setConfirmRemove(false)}>
            Cancel
          </button>
        </div>
      )}
    </li>
  );
}
