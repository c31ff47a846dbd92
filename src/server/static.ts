/**
 * Serves the built page (web/dist): `/` (and `/index.html`) and the files the build wrote. The page
 * routes by hash (`/#/tasks`), so it owns no other path: anything else is a 404 in JSON, so a
 * misconfigured probe or client (`/readyz` on an old daemon, `/api/x`) fails instead of reading HTML.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { NotFoundBody } from '../protocol/index.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
};

// Plain markup: the Content-Security-Policy (headers.ts) allows no inline style.
const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>subconscious</title>
<body><h1>The page is not built</h1><p>The daemon is running, but <code>web/dist</code> is missing.
Run <code>npm run build</code> (or <code>npm start</code>, which builds first) and reload.</p></body>`;

/** The 404 of every path the daemon does not serve. */
export function notFound(urlPath: string): Response {
  const body: NotFoundBody = {
    error: 'not_found',
    message: `Nothing at ${urlPath}. The daemon serves the page at /, JSON-RPC at POST /rpc, events at /events, /mcp, /healthz, /readyz, /metrics and /openapi.json (which describes every method).`,
  };
  return new Response(JSON.stringify(body), { status: 404, headers: { 'content-type': 'application/json; charset=utf-8' } });
}

export function serveStatic(root: string | null, urlPath: string): Response {
  const page = urlPath === '/' || urlPath === '/index.html';
  if (!root || !existsSync(path.join(root, 'index.html'))) {
    if (!page) return notFound(urlPath);
    return new Response(NOT_BUILT, { status: 200, headers: { 'content-type': TYPES['.html']! } });
  }
  const decoded = safeDecode(urlPath);
  const target = decoded ? path.normalize(path.join(root, decoded)) : root;
  const inside = target === root || target.startsWith(root + path.sep);
  const file = page ? path.join(root, 'index.html') : inside && existsSync(target) && statSync(target).isFile() ? target : null;
  if (!file) return notFound(urlPath);
  const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  const immutable = file.includes(`${path.sep}assets${path.sep}`);
  return new Response(readFileSync(file), {
    headers: { 'content-type': type, 'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache' },
  });
}

function safeDecode(p: string): string | null {
  try {
    return decodeURIComponent(p);
  } catch {
    return null;
  }
}
