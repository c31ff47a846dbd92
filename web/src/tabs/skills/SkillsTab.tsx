/** The skills (MCP servers) the agent can use, and whether each one is healthy. "Fix in Skills" lands here. */
import { METHOD_NOT_FOUND, RpcError, explain } from '../../api/rpc.js';
import type { McpServer } from '../../api/types.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { Dot, type DotColor } from '../../ui/Dot.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { Section } from '../../ui/Section.js';

const EVENTS = ['agent.run', 'mcp.changed'];

function health(status: string): DotColor {
  const s = status.toLowerCase();
  if (['ok', 'ready', 'connected', 'healthy', 'up'].includes(s)) return 'green';
  if (['starting', 'connecting', 'checking'].includes(s)) return 'blue';
  if (['disabled', 'stopped', 'unknown'].includes(s)) return 'gray';
  return 'coral';
}

export function SkillsTab() {
  const servers = useLiveRpc<McpServer[]>('mcp.servers', {}, EVENTS);
  const now = useNow(30_000);
  const missing = servers.error instanceof RpcError && servers.error.rpcCode === METHOD_NOT_FOUND;
  return (
    <Section
      id="skills"
      title="Skills"
      count={servers.data?.length}
      actions={
        <button type="button" onClick={() => void servers.reload()}>
          Check again
        </button>
      }
    >
      <p className="muted">
        Skills are the MCP servers listed under <code>[[mcp.servers]]</code> in <code>subconscious.toml</code>. A server that is down or
        refuses its credentials makes tasks that need it fail or ask for approval; fix its command, environment or login, then restart the
        daemon.
      </p>
      {missing && <p data-testid="skills-unavailable">This daemon runs no agent, so it has no skills to list.</p>}
      {servers.error !== undefined && !missing && <p className="coral">The skills could not be read: {explain(servers.error)}</p>}
      {servers.data && servers.data.length === 0 && <p className="muted">No MCP server is configured.</p>}
      {servers.data && servers.data.length > 0 && (
        <ul className="skill-list">
          {servers.data.map((s) => {
            const tools = Array.isArray(s.tools) ? s.tools.length : s.tools;
            return (
              <li key={s.name} className="card skill-card" data-testid="skill-row" data-status={s.status}>
                <header className="world-head">
                  <h3>{s.name}</h3>
                  <span className="state">
                    <Dot color={health(s.status)} /> {s.status}
                  </span>
                </header>
                <p className="small">
                  {tools} {tools === 1 ? 'tool' : 'tools'} · checked <span title={fullTime(s.last_checked_at)}>{relativeTime(s.last_checked_at, now)}</span>
                </p>
                {s.error && <p className="coral small">{s.error}</p>}
              </li>
            );
          })}
        </ul>
      )}
    </Section>
  );
}
