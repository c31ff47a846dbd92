/** Shown when the page has no token or the daemon refused it: how to get one, and a place to paste it. */
import { useState, type FormEvent } from 'react';

export function TokenHelp(props: { rejected: boolean; onToken: (token: string) => void }) {
  const [value, setValue] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) props.onToken(value.trim());
  };
  return (
    <main className="token-help" data-testid="token-help">
      <h1>subconscious</h1>
      <div className="card">
        <h2>{props.rejected ? 'This token was not accepted' : 'This page needs the daemon’s access token'}</h2>
        <p>
          The daemon only answers this page with its token. Open the address that <code>subconscious start</code> printed when it started — it looks like{' '}
          <code>http://127.0.0.1:PORT/?token=…</code> — and the page keeps the token for this tab.
        </p>
        <p>
          The token is also in the file <code>&lt;workspace&gt;/.subconscious/token</code> (created the first time the daemon starts; readable only by you).
          Print it with <code>cat .subconscious/token</code> in the workspace and paste it here:
        </p>
        <form onSubmit={submit} className="token-form">
          <label htmlFor="token-input">Access token</label>
          <input id="token-input" type="password" autoComplete="off" spellCheck={false} value={value} onChange={(e) => setValue(e.target.value)} />
          <button type="submit" className="primary" disabled={!value.trim()}>
            Use token
          </button>
        </form>
      </div>
    </main>
  );
}
