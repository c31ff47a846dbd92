/**
 * A tool call's arguments read as the tool's JSON Schema describes them: one labelled row per
 * property (its description as help), values as text (never markup); and the same as a form
 * for Edit — strings, numbers and booleans as inputs, anything else as JSON — whose result the
 * daemon checks against the schema again (the error names the field).
 */
import { useId, useState, type FormEvent } from 'react';

type Schema = { type?: unknown; properties?: Record<string, { type?: unknown; description?: unknown }>; required?: unknown };

const MAX_SHOWN = 4000;

function propsOf(schema: Record<string, unknown> | null, args: Record<string, unknown>): { name: string; type: string; help: string; required: boolean }[] {
  const s = (schema ?? {}) as Schema;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const declared = s.properties && typeof s.properties === 'object' ? Object.keys(s.properties) : [];
  const names = [...declared, ...Object.keys(args).filter((k) => !declared.includes(k))];
  return names.map((name) => {
    const p = s.properties?.[name] ?? {};
    const type = typeof p.type === 'string' ? p.type : typeof args[name] === 'string' ? 'string' : 'json';
    return { name, type, help: typeof p.description === 'string' ? p.description : '', required: required.has(name) };
  });
}

export function shown(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters)` : text;
}

export function ArgumentsView(props: { schema: Record<string, unknown> | null; args: Record<string, unknown>; tool: string }) {
  const rows = propsOf(props.schema, props.args).filter((r) => r.name in props.args);
  if (rows.length === 0) return <p className="small muted">No arguments.</p>;
  return (
    <dl className="inbox-args" data-testid="inbox-args" aria-label={`Arguments of ${props.tool}`}>
      {rows.map((r) => (
        <div key={r.name} className="inbox-arg" data-arg={r.name}>
          <dt title={r.help || undefined}>
            {r.name}
            {r.help && <span className="small muted"> — {r.help}</span>}
          </dt>
          <dd>
            <pre tabIndex={0}>{shown(props.args[r.name])}</pre>
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** The Edit form: submit gives the changed arguments (or a field's error, before anything is sent). */
export function ArgumentsEditor(props: {
  schema: Record<string, unknown> | null;
  args: Record<string, unknown>;
  tool: string;
  busy: boolean;
  disabledReason: string | null;
  serverError: string | null;
  onSubmit: (args: Record<string, unknown>) => void;
  onCancel: () => void;
}) {
  const rows = propsOf(props.schema, props.args);
  const base = useId();
  const [values, setValues] = useState<Record<string, string | boolean>>(() =>
    Object.fromEntries(
      rows.map((r) => {
        const v = props.args[r.name];
        if (r.type === 'boolean') return [r.name, v === true];
        if (r.type === 'string') return [r.name, typeof v === 'string' ? v : v === undefined ? '' : shown(v)];
        return [r.name, v === undefined ? '' : JSON.stringify(v, null, 2)];
      }),
    ),
  );
  const [error, setError] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const out: Record<string, unknown> = {};
    for (const r of rows) {
      const v = values[r.name];
      if (r.type === 'boolean') out[r.name] = v === true;
      else if (r.type === 'string') {
        if (v === '' && !r.required && !(r.name in props.args)) continue;
        out[r.name] = v;
      } else if (r.type === 'number' || r.type === 'integer') {
        if (v === '' && !r.required) continue;
        const n = Number(v);
        if (!Number.isFinite(n) || (r.type === 'integer' && !Number.isInteger(n)))
          return setError(`${r.name}: must be ${r.type === 'integer' ? 'a whole number' : 'a number'}.`);
        out[r.name] = n;
      } else {
        if (v === '' && !r.required) continue;
        try {
          out[r.name] = JSON.parse(String(v));
        } catch {
          return setError(`${r.name}: is not valid JSON.`);
        }
      }
    }
    setError(null);
    props.onSubmit(out);
  };
  const shownError = error ?? props.serverError;
  return (
    <form className="inbox-edit" onSubmit={submit} aria-label={`Edit the arguments of ${props.tool}`} data-testid="inbox-edit">
      {rows.map((r) => {
        const id = `${base}-${r.name}`;
        const v = values[r.name];
        const set = (x: string | boolean) => setValues((s) => ({ ...s, [r.name]: x }));
        return (
          <div key={r.name} className="inbox-edit-field">
            <label htmlFor={id}>
              {r.name}
              {r.required ? ' (required)' : ''}
              {r.help && <span className="small muted"> — {r.help}</span>}
            </label>
            {r.type === 'boolean' ? (
              <input id={id} type="checkbox" checked={v === true} onChange={(e) => set(e.target.checked)} />
            ) : r.type === 'number' || r.type === 'integer' ? (
              <input id={id} type="number" step={r.type === 'integer' ? 1 : 'any'} value={String(v)} onChange={(e) => set(e.target.value)} />
            ) : (
              <textarea id={id} rows={Math.min(8, Math.max(1, String(v).split('\n').length))} value={String(v)} onChange={(e) => set(e.target.value)} />
            )}
          </div>
        );
      })}
      {shownError && (
        <p className="coral small" role="alert" data-testid="inbox-edit-error">
          {shownError}
        </p>
      )}
      <div className="inbox-actions">
        <button type="submit" className="primary" disabled={props.busy || props.disabledReason !== null} title={props.disabledReason ?? undefined}>
          {props.busy ? 'Running…' : 'Run with these arguments'}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
