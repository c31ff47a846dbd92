/**
 * Add a memory source from the page (issue 21 §2): the kind's few fields, "Test connection" that
 * says exactly what failed (host, TLS, authentication, folder), then Add — or "Add anyway" after a
 * failed test. Secrets are never typed here: the form names the environment variable or the file
 * that holds them, as the TOML does. The daemon validates everything and says which field is wrong.
 */
import { useId, useState } from 'react';
import { call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';

type Kind = 'folder' | 'imap' | 'caldav' | 'ics' | 'mcp';

/** Each kind's fields, in the words of `[[worlds.memory.sources]]`. */
const FIELDS: Record<Kind, Array<{ key: string; label: string; hint: string; list?: boolean; number?: boolean }>> = {
  folder: [{ key: 'path', label: 'Folder', hint: '~/Notes, or a folder in the workspace' }],
  imap: [
    { key: 'host', label: 'IMAP server', hint: 'imap.gmail.com' },
    { key: 'port', label: 'Port', hint: '993 (blank: the TLS default)', number: true },
    { key: 'user', label: 'Account', hint: 'you@example.com' },
    { key: 'password_env', label: 'Password in environment variable', hint: 'GMAIL_APP_PASSWORD' },
    { key: 'password_file', label: 'or password in file', hint: '~/.config/subconscious/gmail' },
    { key: 'folders', label: 'Folders', hint: 'INBOX, Receipts (comma-separated)', list: true },
  ],
  caldav: [
    { key: 'url', label: 'Calendar URL', hint: 'https://caldav.example.com/dav/calendars/you/' },
    { key: 'user', label: 'Account', hint: 'you@example.com' },
    { key: 'password_env', label: 'Password in environment variable', hint: 'CALDAV_PASSWORD' },
    { key: 'password_file', label: 'or password in file', hint: '~/.config/subconscious/caldav' },
  ],
  ics: [{ key: 'location', label: 'ICS file or URL', hint: 'https://…/basic.ics or ~/calendar.ics' }],
  mcp: [
    { key: 'command', label: 'Command', hint: 'npx' },
    { key: 'args', label: 'Arguments', hint: '-y, @modelcontextprotocol/server-everything (comma-separated)', list: true },
    { key: 'url', label: 'or URL', hint: 'http://127.0.0.1:3001/mcp' },
  ],
};

const KIND_LABEL: Record<Kind, string> = {
  folder: 'Folder',
  imap: 'Mail (IMAP)',
  caldav: 'Calendar (CalDAV)',
  ics: 'Calendar file (ICS)',
  mcp: 'MCP server resources',
};

/** The form's values as a source the daemon validates (empty fields left out). */
function sourceOf(kind: Kind, namespace: string, label: string, values: Record<string, string>): { kind: string; namespace: string; [key: string]: unknown } {
  const source: { kind: string; namespace: string; [key: string]: unknown } = { kind, namespace: namespace.trim() };
  if (label.trim()) source.label = label.trim();
  for (const f of FIELDS[kind]) {
    const raw = (values[f.key] ?? '').trim();
    if (!raw) continue;
    source[f.key] = f.list
      ? raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : f.number
        ? Number(raw)
        : raw;
  }
  return source;
}

export function AddSource(props: { added: () => void }) {
  const ids = useId();
  const { notify, offlineReason } = useShell();
  const [kind, setKind] = useState<Kind>('imap');
  const [namespace, setNamespace] = useState('');
  const [label, setLabel] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  /** The last test's words, and whether it failed (then Add becomes "Add anyway"). */
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const source = () => sourceOf(kind, namespace, label, values);
  const disabled = busy || offlineReason !== null;

  const test = async () => {
    setBusy(true);
    try {
      const r = await call('memory.sources_test', { source: source() });
      setResult({ ok: r.ok, text: r.failure ? `${r.message}${r.failure.hint ? ` ${r.failure.hint}` : ''}` : r.message });
    } catch (err) {
      setResult({ ok: false, text: explain(err) });
    } finally {
      setBusy(false);
    }
  };
  const add = async () => {
    setBusy(true);
    try {
      const r = await call('memory.sources_add', { source: source(), ...(result && !result.ok ? { force: true } : {}) });
      notify(r.message, 'info');
      setResult(null);
      setValues({});
      setNamespace('');
      setLabel('');
      props.added();
    } catch (err) {
      setResult({ ok: false, text: explain(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="add-source"
      data-testid="add-source"
      onSubmit={(e) => {
        e.preventDefault();
        void add();
      }}
    >
      <p className="muted">
        Secrets are never typed here: name the environment variable or the file that holds the password, as in <code>subconscious.toml</code>.
      </p>
      <div className="add-source-fields">
        <span className="field">
          <label htmlFor={`${ids}-kind`}>Kind</label>
          <select
            id={`${ids}-kind`}
            value={kind}
            onChange={(e) => {
              setKind(e.target.value as Kind);
              setResult(null);
            }}
          >
            {(Object.keys(FIELDS) as Kind[]).map((k) => (
              <option key={k} value={k}>
                {KIND_LABEL[k]}
              </option>
            ))}
          </select>
        </span>
        <span className="field">
          <label htmlFor={`${ids}-ns`}>Namespace</label>
          <input id={`${ids}-ns`} value={namespace} placeholder="mail" maxLength={64} onChange={(e) => setNamespace(e.target.value)} required />
        </span>
        <span className="field">
          <label htmlFor={`${ids}-label`}>Label</label>
          <input id={`${ids}-label`} value={label} placeholder="Work mail (optional)" maxLength={100} onChange={(e) => setLabel(e.target.value)} />
        </span>
        {FIELDS[kind].map((f) => (
          <span className="field" key={`${kind}-${f.key}`}>
            <label htmlFor={`${ids}-${f.key}`}>{f.label}</label>
            <input
              id={`${ids}-${f.key}`}
              data-field={f.key}
              value={values[f.key] ?? ''}
              placeholder={f.hint}
              inputMode={f.number ? 'numeric' : undefined}
              onChange={(e) => {
                setValues({ ...values, [f.key]: e.target.value });
                setResult(null);
              }}
            />
          </span>
        ))}
      </div>
      <div className="add-source-actions">
        <button type="button" onClick={() => void test()} disabled={disabled} title={offlineReason ?? undefined}>
          Test connection
        </button>
        <button type="submit" disabled={disabled} title={offlineReason ?? undefined}>
          {result && !result.ok ? 'Add anyway' : 'Add source'}
        </button>
      </div>
      {result && (
        <p className={result.ok ? 'add-source-ok' : 'add-source-failed'} data-testid="add-source-result" role="status">
          {result.text}
        </p>
      )}
    </form>
  );
}
