/**
 * The skills (MCP servers) the agent can use and whether each one is healthy. "Fix in Skills"
 * lands here, on the server it is about (`#/skills/<name>`): that card is marked and scrolled to.
 */
import { useEffect, useRef, useState } from 'react';
import { METHOD_NOT_FOUND, RpcError, explain, call } from '../../api/rpc.js';
import type { McpServer } from '../../api/types.js';
import { useShell } from '../../shell/context.js';
import { useLiveRpc, useNow } from '../../shell/hooks.js';
import { Dot, type DotColor } from '../../ui/Dot.js';
import { fullTime, relativeTime } from '../../ui/format.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';
import './skills.css';

const EVENTS = ['agent.run', 'mcp.changed'] as const;

const HEALTH: Record<string, { color: DotColor; label: string }> = {
  connected: { color: 'green', label: 'connected' },
  starting: { color: 'blue', label: 'starting' },
  disconnected: { color: 'gray', label: 'not connected' },
  error: { color: 'coral', label: 'error' },
};

export function SkillsTab() {
  const { notify, route } = useShell();
  const servers = useLiveRpc('mcp.servers', {}, EVENTS);
  const [checking, setChecking] = useState(false);
  const now = useNow(30_000);
  const missing = servers.error instanceof RpcError && servers.error.rpcCode === METHOD_NOT_FOUND;
  const list = servers.data?.servers;

  const check = async () => {
    setChecking(true);
    try {
      const fresh = await call('mcp.servers', { check: true });
      servers.mutate(() => fresh);
    } catch (err) {
      notify(`Could not check the skills: ${explain(err)}`, 'error');
    } finally {
      setChecking(false);
    }
  };

  return (
    <Section
      id="skills"
      title="Skills"
      count={list?.length}
      actions={
        !missing && (
          <button type="button" onClick={() => void check()} disabled={checking}>
            {checking ? 'Checking…' : 'Check now'}
          </button>
        )
      }
    >
      <p className="muted">
        Skills are the MCP tool servers listed as <code>[[mcp.servers]]</code> in <code>subconscious.toml</code>. When one is down or its login expired, tasks
        that need it fail or ask for approval: fix its command, environment or credentials there, restart the daemon, then press <em>Check now</em>.
      </p>
      {missing && <p data-testid="skills-unavailable">This daemon runs no agent, so it has no skills to list.</p>}
      {servers.error !== undefined && !missing && (
        <p className="coral">
          The skills could not be read: <MessageText text={explain(servers.error)} />
        </p>
      )}
      {list && list.length === 0 && <p className="muted">No MCP server is configured.</p>}
      {list && list.length > 0 && (
        <ul className="skill-list">
          {list.map((s) => (
            <SkillCard key={s.name} server={s} now={now} focused={s.name === route} />
          ))}
        </ul>
      )}
    </Section>
  );
}

function SkillCard(props: { server: McpServer; now: number; focused: boolean }) {
  const s = props.server;
  const health = HEALTH[s.status] ?? { color: 'coral' as const, label: s.status };
  const tools = s.tools.length;
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (props.focused) ref.current?.scrollIntoView({ block: 'center' });
  }, [props.focused]);
  return (
    <li
      ref={ref}
      className={`card skill-card${props.focused ? ' skill-focused' : ''}`}
      data-testid="skill-row"
      data-status={s.status}
      data-focused={props.focused}
      aria-current={props.focused ? 'true' : undefined}
    >
      {props.focused && (
        <p className="small skill-focus-note">An approval card is waiting on this skill: fix it here, and the card resolves by itself once it is healthy.</p>
      )}
      <header className="world-head">
        <h3>{s.name}</h3>
        <span className="state">
          <Dot color={health.color} /> {health.label}
        </span>
      </header>
      <p className="small">
        {tools} {tools === 1 ? 'tool' : 'tools'} · last answered <span title={fullTime(s.last_checked_at)}>{relativeTime(s.last_checked_at, props.now)}</span>
        {s.restarts ? ` · restarted ${s.restarts}×` : ''}
      </p>
      {tools > 0 && <p className="small muted skill-tools">{s.tools.join(', ')}</p>}
      {s.error && (
        <p className="coral small">
          <MessageText text={s.error} />
        </p>
      )}
    </li>
  );
}
