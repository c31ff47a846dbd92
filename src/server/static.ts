/** Serves the built page (web/dist) with an SPA fallback to index.html. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

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

export function serveStatic(root: string | null, urlPath: string): Response {
  if (!root || !existsSync(path.join(root, 'index.html'))) {
    return new Response(NOT_BUILT, { status: 200, headers: { 'content-type': TYPES['.html']! } });
  }
  const decoded = safeDecode(urlPath);
  const target = decoded ? path.normalize(path.join(root, decoded)) : root;
  const inside = target === root || target.startsWith(root + path.sep);
  let file = inside && existsSync(target) && statSync(target).isFile() ? target : null;
  // Unknown paths without an extension are client-side routes: answer with the app.
  if (!file && path.extname(decoded ?? '') === '') file = path.join(root, 'index.html');
  if (!file) return new Response('Not found', { status: 404 });
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
