/**
 * The daemon's routes beside RPC and events: `/openapi.json` (what every method takes and
 * answers), `/readyz` (able to work, not just up), `/mcp` (the MCP face over Streamable HTTP,
 * with the token) and the JSON 404 of every path the daemon does not serve.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context, Hono } from 'hono';
import type { ReadyReport } from '../protocol/index.js';
import { notFound } from './static.js';

export interface ApiRoutes {
  /** The OpenAPI document of what this daemon serves. */
  openapi?: () => Record<string, unknown>;
  /** Store, migrations and model checks (`/readyz`). */
  ready?: () => Promise<ReadyReport>;
  /** One Streamable HTTP MCP request (POST/GET/DELETE `/mcp`), after the token and Host doors. */
  mcp?: (request: Request) => Promise<Response>;
}

type Env = { Bindings: Partial<HttpBindings> };
type AnyContext = Context<Env>;

export function addApiRoutes(
  app: Hono<Env>,
  routes: ApiRoutes,
  doors: { authorized: (c: AnyContext) => boolean; unauthorized: (c: AnyContext) => Response; exposed: boolean },
): void {
  const { openapi, ready, mcp } = routes;
  if (openapi) app.get('/openapi.json', (c: AnyContext) => c.json(openapi()));
  if (ready) {
    app.get('/readyz', async (c: AnyContext) => {
      // Bound beyond loopback, strangers learn only the verdict.
      const report = await ready();
      const body = doors.exposed && !doors.authorized(c) ? { ready: report.ready, checks: {} } : report;
      return c.json(body, report.ready ? 200 : 503);
    });
  }
  if (mcp) {
    app.on(['GET', 'POST', 'DELETE'], '/mcp', (c: AnyContext) => (doors.authorized(c) ? mcp(c.req.raw) : doors.unauthorized(c)));
  }
  app.notFound((c: AnyContext) => notFound(c.req.path));
}
