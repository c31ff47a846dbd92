/**
 * A bot's tools in its panel, each one whose MCP server is down (or not configured) marked with
 * the reason from the MCP health the Skills tab reads: a bot runs without such a tool and says nothing.
 */
import type { McpServer } from '../../api/types.js';
import { useLiveRpc } from '../../shell/hooks.js';

/** Why a tool is unavailable, or undefined while it is usable (or not started yet). */
function unavailable(name: string, servers: McpServer[]): string | undefined {
  const s = servers.find((x) => x.name === name);
  if (!s) return 'not configured in subconscious.toml';
  if (s.status === 'error') return s.error ?? 'its server failed';
  return undefined;
}

export function BotTools(props: { tools: string[] }) {
  const servers = useLiveRpc('mcp.servers', {}, ['mcp.changed']);
  if (!props.tools.length) return <>none (it can only talk)</>;
  const list = servers.data?.servers;
  const down = list ? props.tools.map((tool) => ({ tool, why: unavailable(tool, list) })).filter((d) => d.why) : [];
  return (
    <>
      {props.tools.join(', ')}
      {down.map((d) => (
        <p key={d.tool} className="bot-tool-down coral small" role="status" data-testid="bot-tool-unavailable">
          {d.tool}: unavailable — {d.why}. The bot runs without it.
        </p>
      ))}
    </>
  );
}
