/**
 * The memory page tests' one setup: a daemon from dist/ whose memory source is a folder copied
 * from `test/memory/fixtures/inbox` (notes and an email; tasks off, the conscious loop and the
 * memory world starting at once), the scripted model server's env for both roles, an
 * extraction item in the seed's shape, and Chromium on the page (CSP violations recorded).
 */
import { cpSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { DECISION_SYSTEM } from '../../../src/worlds/memory/prompts.js';
import { startDaemon, type TestDaemon } from '../../support/daemon.js';
import type { ModelServer, RecordedRequest } from '../../support/model-server.js';
import { launchBrowser, recordCspViolations, type TestBrowser, type WatchedPage } from './browser.js';

const FIXTURES = fileURLToPath(new URL('../../memory/fixtures/inbox', import.meta.url));
/** The memory world's decision agent is known by its system prompt's first line. */
export const DECISION_FIRST_LINE = DECISION_SYSTEM.split('\n')[0]!;

/** The text of a request's messages of one role. */
export function textOf(req: RecordedRequest, role: string): string {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === role)
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

/** The conscious extraction is known by its user message. */
export const isExtraction = (req: RecordedRequest): boolean => textOf(req, 'user').includes('Recalled memory from');

/** One item of an extraction reply (the seed's ActionableItem). */
export const extracted = (title: string, source: string, priority: string, label: string, over: Record<string, unknown> = {}) => ({
  title,
  description: `About ${title.toLowerCase()}.`,
  source,
  priority,
  actionable: true,
  requires_confirmation: false,
  has_complex_action: false,
  source_label: label,
  ...over,
});

export const modelEnv = (server: ModelServer): Record<string, string> => ({
  SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
  SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
  SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
  SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
});

/** The config lines that read the workspace's `inbox` folder as memory at once (conscious and memory loops without their start delay). */
export const INBOX_SOURCE_CONFIG: readonly string[] = [
  '[worlds.conscious]',
  'initial_delay_seconds = 0',
  '[worlds.memory]',
  'initial_delay_seconds = 0',
  '[[worlds.memory.sources]]',
  'kind = "folder"',
  'path = "inbox"',
  'namespace = "inbox"',
  'label = "Inbox"',
  'debounce_ms = 100',
];

/** A daemon on a fresh workspace holding the fixture inbox as its folder source `inbox`. */
export async function startInboxDaemon(server: ModelServer, prefix: string): Promise<{ daemon: TestDaemon; workspace: string }> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), prefix));
  cpSync(FIXTURES, path.join(workspace, 'inbox'), { recursive: true });
  const daemon = await startDaemon({
    workspace,
    config: [
      '[worlds.tasks]',
      'enabled = false', // these page tests are about memory; the tasks world has its own
      ...INBOX_SOURCE_CONFIG,
      '',
    ].join('\n'),
    env: modelEnv(server),
  });
  return { daemon, workspace };
}

/** Poll `check` every 100 ms until it holds; a deadline in time, not tries, so a loaded machine's slow reads do not shorten it. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what} (${Math.round(timeoutMs / 1000)} s)`);
}

/** The daemon's first conscious run and the memory world's baseline. */
export async function firstRuns(daemon: TestDaemon, actionables: number, timeoutMs?: number): Promise<void> {
  await waitFor('the first conscious run', async () => (await daemon.rpc<unknown[]>('conscious.list')).length === actionables, timeoutMs);
  await waitFor('the memory baseline', async () => ((await daemon.rpc<{ baseline: unknown }>('memory.diff')).baseline ?? null) !== null, timeoutMs);
}

/** Chromium on the daemon's page, live; `cspViolations()` lists what the page's CSP blocked. */
export async function openPage(
  daemon: TestDaemon,
): Promise<{ browser: TestBrowser; watched: WatchedPage; page: Page; cspViolations: () => Promise<string[]> }> {
  const browser = await launchBrowser();
  const watched = await browser.newPage();
  const page = watched.page;
  const cspViolations = await recordCspViolations(page);
  await page.goto(daemon.pageUrl);
  await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  return { browser, watched, page, cspViolations };
}

export async function openTab(page: Page, name: string): Promise<void> {
  await page.getByRole('tab', { name }).click();
  await page.locator('[role="tab"][aria-selected="true"]', { hasText: name }).waitFor();
}
