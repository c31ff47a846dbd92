/**
 * How a person connects memory: a folder in `subconscious.toml`, or documents pushed over RPC.
 * Shown where memory is empty (the Memory tab, the Actionables tab's empty state).
 */
import './memory.css';

const TOML = `[[worlds.memory.sources]]
kind = "folder"
path = "~/Notes"    # or a folder in the workspace
namespace = "notes"
label = "Notes"     # optional`;

const RPC = `{"jsonrpc": "2.0", "id": 1, "method": "memory.store_document",
 "params": {"namespace": "crm", "external_id": "deal-7",
            "title": "Initech renewal", "body": "…"}}`;

export function ConnectSource(props: { compact?: boolean }) {
  return (
    <div className="connect-source" data-testid="connect-source">
      <p>
        <strong>Connect a folder</strong> of <code>.md</code>, <code>.txt</code>, <code>.eml</code> or <code>.mbox</code> files: add this to{' '}
        <code>subconscious.toml</code> in the workspace and restart the daemon. It stays in step with the folder (new, changed and deleted files).
      </p>
      <pre className="code-block" aria-label="Example source in subconscious.toml">
        {TOML}
      </pre>
      {!props.compact && (
        <>
          <p>
            <strong>Or push documents</strong> from your own app with the JSON-RPC method <code>memory.store_document</code> (<code>POST /rpc</code> with the
            daemon’s token); the same <code>external_id</code> again updates the document.
          </p>
          <pre className="code-block" aria-label="Example memory.store_document call">
            {RPC}
          </pre>
        </>
      )}
    </div>
  );
}
