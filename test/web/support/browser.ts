/**
 * Debian's Chromium driven by playwright-core (never a downloaded browser), a fresh profile per
 * launch, console errors collected so a test can fail on any, and screenshots written where a
 * person can look at them (test-output/screenshots/).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SUBCONSCIOUS_CHROMIUM ?? '/usr/bin/chromium';
const ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

export interface TestBrowser {
  context: BrowserContext;
  /** A new tab (its own sessionStorage) whose console errors are collected. */
  newPage(): Promise<WatchedPage>;
  close(): Promise<void>;
}

export interface WatchedPage {
  page: Page;
  /** Console errors and uncaught exceptions so far. */
  errors: string[];
}

/** Missing Chromium is a failure with the fix, never a skip (CI installs it with apt-get). */
export function assertChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}. Install Debian's package: apt-get update && apt-get install -y chromium (the browser tests never download one).`,
    );
  }
}

/**
 * `timezoneId`: the zone the page believes it is in (the machine's when left out); `viewport`
 * (1280×800 when left out) and `colorScheme` (what `prefers-color-scheme` says) for the whole
 * context.
 */
export async function launchBrowser(
  opts: { timezoneId?: string; viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {},
): Promise<TestBrowser> {
  assertChromium();
  const profile = mkdtempSync(path.join(os.tmpdir(), 'subc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: opts.viewport ?? { width: 1280, height: 800 },
    reducedMotion: 'no-preference',
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
    ...(opts.colorScheme ? { colorScheme: opts.colorScheme } : {}),
  });
  // The persistent context opens one blank tab; tests open their own.
  for (const p of context.pages()) await p.close();
  return {
    context,
    async newPage() {
      const page = await context.newPage();
      // Fail on a missing element well inside the test's own timeout, naming the locator.
      page.setDefaultTimeout(10_000);
      const errors: string[] = [];
      page.on('console', (msg: ConsoleMessage) => {
        if (msg.type() === 'error') errors.push(`console: ${msg.text()} @ ${msg.location().url}`);
      });
      page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
      return { page, errors };
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 360, height: 740 },
] as const;

/** Screenshots of the current view at desktop and phone sizes; returns the files written. */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // Passing messages (toasts) would cover the view a person wants to look at.
  await page.locator('button[aria-label="Dismiss message"]').evaluateAll((buttons) => buttons.forEach((b) => (b as HTMLButtonElement).click()));
  const before = page.viewportSize();
  const files: string[] = [];
  for (const v of VIEWPORTS) {
    await page.setViewportSize(v);
    const file = path.join(SCREENSHOT_DIR, `${name}-${v.width}x${v.height}.png`);
    await page.screenshot({ path: file, fullPage: true, animations: 'disabled' });
    files.push(file);
  }
  if (before) await page.setViewportSize(before);
  return files;
}

/** Nothing at 360 px may be wider than the screen (no sideways scrolling of the page). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

/** Record what the page's CSP blocks from its next navigation on; the returned function lists it. */
export async function recordCspViolations(page: Page): Promise<() => Promise<string[]>> {
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __csp: string[] }).__csp = seen;
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return () => page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
}
