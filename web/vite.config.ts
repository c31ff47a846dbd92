/**
 * Builds the page into web/dist, which the daemon serves at `/`.
 * `SUBCONSCIOUS_URL=http://127.0.0.1:PORT npx vite --config web/vite.config.ts` runs a dev server
 * that forwards /rpc and /events to a running daemon.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const root = fileURLToPath(new URL('.', import.meta.url));
const daemon = process.env.SUBCONSCIOUS_URL;

export default defineConfig({
  root,
  base: '/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
  server: daemon ? { proxy: { '/rpc': daemon, '/events': daemon } } : {},
});
