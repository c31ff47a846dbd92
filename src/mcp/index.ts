/** The MCP face: tools and resources over the RPC contract (server.ts), on stdio or `/mcp` (http.ts). */
export { createMcpFace, MCP_RESOURCES, type McpFaceDeps } from './server.js';
export { createMcpHttp, type McpHttp } from './http.js';
