/**
 * One memory document, opened by its address (`#/memory/doc:<namespace>/<external id>`): what
 * an actionable links to — the document it came from, or its own `conscious` document. The
 * document's text is shown as text (never HTML); a removed one says so.
 */
import { useEffect, useState } from 'react';
import { call, explain } from '../../api/rpc.js';
import type { MemoryDocument } from '../../../../src/protocol/index.js';
import { useNow } from '../../shell/hooks.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';

const PREFIX = 'doc:';

/** The address detail of a document (`navigate('memory', documentRoute(ns, id))`). */
export function documentRoute(namespace: string, externalId: string): string {
  return `${PREFIX}${namespace}/${externalId}`;
}

/** The document a route names (namespaces hold no `/`; an external id may). */
export function parseDocumentRoute(route: string): { namespace: string; external_id: string } | null {
  if (!route.startsWith(PREFIX)) return null;
  const rest = route.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return null;
  return { namespace: rest.slice(0, slash), external_id: rest.slice(slash + 1) };
}

export function DocumentView(props: { route: string; labels: Map<string, string>; onClose: () => void }) {
  const now = useNow(60_000);
  const ref = parseDocumentRoute(props.route);
  const [state, setState] = useState<{ key: string; doc?: MemoryDocument; error?: string } | null>(null);
  const namespace = ref?.namespace ?? '';
  const externalId = ref?.external_id ?? '';
  const key = `${namespace}/${externalId}`;
  useEffect(() => {
    if (!namespace) return;
    let live = true;
    const at = `${namespace}/${externalId}`;
    call('memory.get_document', { namespace, external_id: externalId }).then(
      (doc) => live && setState({ key: at, doc }),
      (err: unknown) => live && setState({ key: at, error: explain(err) }),
    );
    return () => {
      live = false;
    };
  }, [namespace, externalId]);
  if (!ref) return null;
  const current = state?.key === key ? state : null;
  const label = props.labels.get(ref.namespace) ?? ref.namespace;
  return (
    <Section
      id="memory-document"
      title="Document"
      actions={
        <button type="button" className="link" onClick={props.onClose} aria-label="Close the document">
          Close
        </button>
      }
    >
      {!current && <p className="muted">Opening the document…</p>}
      {current?.error && (
        <p className="coral" role="alert">
          Could not open {label} / {ref.external_id}: {current.error}
        </p>
      )}
      {current?.doc && (
        <article className="memory-document" data-namespace={current.doc.namespace} data-external-id={current.doc.external_id}>
          <h3 data-testid="document-title">{current.doc.title || current.doc.external_id}</h3>
          <p className="muted small">
            {label} · {current.doc.external_id} · updated{' '}
            <time dateTime={new Date(current.doc.updated_at).toISOString()} title={fullTime(current.doc.updated_at)}>
              {relativeTime(current.doc.updated_at, now)}
            </time>
            {current.doc.deleted_at !== null && <strong> · removed from its source</strong>}
          </p>
          <div className="memory-document-body" data-testid="document-body">
            {current.doc.body}
          </div>
        </article>
      )}
    </Section>
  );
}
