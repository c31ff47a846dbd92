/**
 * `subconscious mcp`: the MCP face on stdio. Calls go to the workspace's running daemon when there
 * is one (so its page sees the change live), else to the store opened in this process
 * (`CliConnection`); events come from the same place, for the resources' change notifications.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadConfig } from '../app/config.js';
import { productModules } from '../app/modules.js';
import { createLogger } from '../core/logger.js';
import { createMcpFace } from '../mcp/index.js';
import { CliConnection } from './connection.js';

export async function serveMcpStdio(workspace: string, version: string): Promise<void> {
  const config = loadConfig({ workspace, modules: productModules });
  const connection = new CliConnection(() => workspace);
  const log = createLogger();
  const face = createMcpFace({
    call: (method, params) => connection.call(method, params),
    subscribe: (listener) => {
      const stop = connection.subscribe(listener).catch((err: unknown) => {
        log.warn({ err }, 'MCP: no events, so resources will not notify changes');
        return () => undefined;
      });
      return () => void stop.then((s) => s());
    },
    allowAnswers: config.server.mcp_allow_answers,
    version,
    log,
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await face.server.connect(transport);
  await closed;
  face.close();
  await connection.close();
}
