/**
 * The page tests' usual start, in one place: the page built, the scripted model server with the
 * test's handler, a real daemon (both model roles on that server, plus the test's config and
 * environment), and Chromium on the daemon's page once its live connection is open, with console
 * errors and CSP violations recorded. `openOn` opens the same daemon's page in a fresh browser
 * (its own viewport and colour scheme) for tests that look at several variants.
 */
import type { Page } from 'playwright-core';
import { startDaemon, type TestDaemon } from '../../support/daemon.js';
import { scriptedModelEnv, startModelServer, type ModelServer, type ReplyHandler } from '../../support/model-server.js';
import { launchBrowser, recordCspViolations, type TestBrowser } from './browser.js';
import { ensurePageBuilt } from './page-build.js';

export interface PageVariant {
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
  timezoneId?: string;
}

export interface OpenPage {
  browser: TestBrowser;
  page: Page;
  /** Console errors and uncaught exceptions so far. */
  errors: string[];
  cspViolations(): Promise<string[]>;
  close(): Promise<void>;
}

export interface LivePage extends OpenPage {
  server: ModelServer;
  daemon: TestDaemon;
  /** The same daemon's page in a fresh browser, live. */
  openOn(variant: PageVariant): Promise<OpenPage>;
  /** Close the browsers opened here, stop the daemon, close the model server. */
  dispose(): Promise<void>;
}

export interface LivePageOptions {
  /** The model server's answers. */
  handle: ReplyHandler;
  /** Lines of `subconscious.toml`. */
  config?: string[];
  /** More environment for the daemon (after the scripted model roles). */
  env?: Record<string, string>;
  workspace?: string;
  /** Models the server lists (`/v1/models`). */
  models?: string[];
  /** The first page's viewport and colour scheme. */
  variant?: PageVariant;
  /** Before the page opens: seed the daemon (RPC). */
  before?: (daemon: TestDaemon, server: ModelServer) => Promise<void>;
}

/** Chromium on the daemon's page, waiting until the page's live connection is open. */
export async function openPageOn(daemon: TestDaemon, variant: PageVariant = {}): Promise<OpenPage> {
  const browser = await launchBrowser(variant);
  const { page, errors } = await browser.newPage();
  const cspViolations = await recordCspViolations(page);
  await page.goto(daemon.pageUrl);
  await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  return { browser, page, errors, cspViolations, close: () => browser.close() };
}

export async function openLivePage(opts: LivePageOptions): Promise<LivePage> {
  await ensurePageBuilt();
  const server = await startModelServer({ models: opts.models ?? ['scripted-model'] });
  server.handle(opts.handle);
  const daemon = await startDaemon({
    ...(opts.workspace ? { workspace: opts.workspace } : {}),
    ...(opts.config ? { config: [...opts.config, ''].join('\n') } : {}),
    env: { ...scriptedModelEnv(server), ...opts.env },
  });
  const opened: OpenPage[] = [];
  try {
    await opts.before?.(daemon, server);
    const first = await openPageOn(daemon, opts.variant);
    opened.push(first);
    return {
      ...first,
      server,
      daemon,
      async openOn(variant) {
        const p = await openPageOn(daemon, variant);
        opened.push(p);
        return p;
      },
      async dispose() {
        for (const p of opened) await p.close().catch(() => undefined);
        await daemon.dispose();
        await server.close();
      },
    };
  } catch (err) {
    for (const p of opened) await p.close().catch(() => undefined);
    await daemon.dispose();
    await server.close();
    throw err;
  }
}
