/**
 * `/mcp` on the daemon: MCP's Streamable HTTP transport, one MCP server per session (the SDK
 * binds a server to one transport). The daemon's doors come first (http.ts: the Host check and
 * the bearer token), so this sees only requests that passed them.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { createMcpFace, type McpFaceDeps } from './server.js';

export interface McpHttp {
  handle(request: Request): Promise<Response>;
  /** End every session (daemon stop). */
  close(): Promise<void>;
}

const MAX_SESSIONS = 100;

export function createMcpHttp(deps: McpFaceDeps): McpHttp {
  const sessions = new Map<string, { transport: WebStandardStreamableHTTPServerTransport; close(): void }>();
  const json = (status: number, message: string) =>
    new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }), { status, headers: { 'content-type': 'application/json' } });

  return {
    async handle(request) {
      const id = request.headers.get('mcp-session-id');
      const known = id ? sessions.get(id) : undefined;
      if (known) return known.transport.handleRequest(request);
      if (id) return json(404, 'Unknown or ended MCP session: initialize a new one.');
      if (request.method !== 'POST') return json(400, 'Start an MCP session with an initialize request (POST).');
      if (sessions.size >= MAX_SESSIONS) return json(503, `Too many MCP sessions (${MAX_SESSIONS}); close some (DELETE /mcp) and try again.`);
      const face = createMcpFace(deps);
      const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, close: face.close }),
        onsessionclosed: (sessionId) => {
          sessions.get(sessionId)?.close();
          sessions.delete(sessionId);
        },
      });
      await face.server.connect(transport);
      const response = await transport.handleRequest(request);
      // Not an initialize request (or a refused one): no session came of it.
      if (!transport.sessionId) face.close();
      return response;
    },
    async close() {
      for (const session of sessions.values()) session.close();
      sessions.clear();
    },
  };
}
