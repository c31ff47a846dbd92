/**
 * Issue 20's visible pieces of seeds 3 and 4 in real Chromium against the real daemon (a folder
 * source of notes and an email, the scripted model server answering the conscious loop's
 * extraction, the memory world's decision agent and the bot's runs):
 *
 * - an actionable links to the memory document it came from and to its own `conscious`
 *   document; each opens on the Memory tab's document view (its text as text), and Close goes;
 * - the memory world proposes two to-dos for @ops with `delegate`: nothing reaches the bot until
 *   the person answers; Accept makes one the bot's task (its run starts), Decline sends nothing;
 *   both fold into "Answered";
 * - screenshots of both, keyboard focus on the links, contrast, and not one CSP violation.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actionable, MemoryDelegation } from '../../src/protocol/index.js';
import type { Bot, ThreadView } from '../../src/protocol/bots.js';
import { CONSCIOUS_NAMESPACE } from '../../src/protocol/conscious.js';
import type { TestDaemon } from '../support/daemon.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { contrastFailures } from './support/a11y.js';
import { horizontalOverflow, screenshots, type TestBrowser } from './support/browser.js';
import {
  DECISION_FIRST_LINE,
  extracted,
  firstRuns,
  isExtraction,
  openPage,
  openTab as openTabOf,
  startInboxDaemon,
  textOf,
  waitFor,
} from './support/memory-page.js';
import { ensurePageBuilt } from './support/page-build.js';

const EXTRACTED = [
  extracted('Pay ACME invoice 2291', 'gmail', 'critical', 'Inbox', {
    description: 'Invoice 2291 (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.',
  }),
  extracted('Buy compost for the garden', 'system', 'normal', 'Garden plan', { description: 'Buy compost before the weekend.' }),
];

describe('actionables’ memory links and delegations in Chromium', () => {
  let browser: TestBrowser;
  let server: ModelServer;
  let daemon: TestDaemon;
  let workspace: string;
  let page: Page;
  let cspViolations: () => Promise<string[]>;
  const botCalls: string[] = [];

  const openTab = (name: string) => openTabOf(page, name);
  const delegations = () => daemon.rpc<MemoryDelegation[]>('memory.delegations_list', {});

  beforeAll(async () => {
    await ensurePageBuilt();
    server = await startModelServer({ models: ['scripted-model'] });
    server.handle((req) => {
      if (isExtraction(req)) return { json: EXTRACTED };
      if (textOf(req, 'system').includes(DECISION_FIRST_LINE)) {
        const tools = textOf(req, 'tool');
        const added = [...tools.matchAll(/Added to-do ([\w-]+?)\./g)].map((m) => m[1]!);
        if (added.length === 0)
          return {
            toolCalls: [
              { name: 'update_task', arguments: { title: 'Decide on the Initech renewal', note: 'before Friday' } },
              { name: 'update_task', arguments: { title: 'Cancel the Initech trial seats', note: 'unused since March' } },
            ],
          };
        if (!tools.includes('Proposed:'))
          return {
            toolCalls: [
              { name: 'delegate', arguments: { todo_id: added[0], bot: '@ops', instruction: 'Ask Initech for the renewal terms and tell me by Thursday.' } },
              { name: 'delegate', arguments: { todo_id: added[1], bot: '@ops', instruction: 'Cancel the unused Initech trial seats.' } },
            ],
          };
        return { text: 'Added two to-dos and proposed both for @ops.' };
      }
      if (/\(@ops\)/.test(textOf(req, 'system'))) {
        botCalls.push(textOf(req, 'user'));
        return { text: 'Asked Initech for the renewal terms; I will report by Thursday.' };
      }
      return { status: 400, message: `memory links page test: unscripted request (${textOf(req, 'system').split('\n')[0]!.slice(0, 80)})` };
    });
    ({ daemon, workspace } = await startInboxDaemon(server, 'subc-memory-links-'));
    await firstRuns(daemon, 2);
    await daemon.rpc<Bot>('bots.create', { name: 'ops', label: 'Ops', description: 'Chases vendors and contracts.' });
    ({ browser, page, cspViolations } = await openPage(daemon));
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.dispose();
    await server?.close();
  });

  it('an actionable opens the document it came from, and its own conscious document, on the Memory tab', async () => {
    await openTab('Actionables');
    const pay = page.locator('[data-testid="actionable"]', { hasText: 'Pay ACME invoice 2291' });
    const from = pay.getByTestId('source-document-link');
    await from.waitFor();
    expect(await from.innerText()).toBe('Invoice 2291 is 30 days overdue');
    // The synthesized-from-nothing case is covered in the world's test; here both items came from a document.
    expect(await page.locator('[data-testid="actionable"]', { hasText: 'Buy compost' }).getByTestId('source-document-link').innerText()).toBe('Garden plan');
    await screenshots(page, 'actionables-links');
    expect(await contrastFailures(page), 'the links on a card').toEqual([]);

    // Keyboard: the link is a button in the card's order; Enter opens the document.
    await from.focus();
    await page.keyboard.press('Enter');
    await page.locator('[role="tab"][aria-selected="true"]', { hasText: 'Memory' }).waitFor();
    const view = page.getByTestId('memory-document');
    await view.locator('article[data-namespace="inbox"][data-external-id="invoice-2291.eml"]').waitFor();
    expect(await view.getByTestId('document-title').innerText()).toBe('Invoice 2291 is 30 days overdue');
    expect(await view.getByTestId('document-body').innerText()).toContain('Invoice 2291 (EUR 1,840.00) is now 30 days overdue');
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe('#/memory/doc:inbox/invoice-2291.eml');
    await screenshots(page, 'memory-document');
    expect(await contrastFailures(page), 'the document view').toEqual([]);
    // At 360 px, light and dark, the document view does not scroll sideways and keeps its contrast.
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width: 360, height: 740 });
      expect(await horizontalOverflow(page), `the document view at 360 px, ${scheme}`).toBe(0);
      expect(await contrastFailures(page), `the document view at 360 px, ${scheme}`).toEqual([]);
      await page.setViewportSize({ width: 1280, height: 800 });
      await screenshots(page, `memory-document-${scheme}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });

    // Its own document in the conscious namespace, which names its source.
    await openTab('Actionables');
    await page
      .locator('[data-testid="actionable"]', { hasText: 'Buy compost' })
      .getByRole('button', { name: 'Open “Buy compost for the garden” in memory' })
      .click();
    const own = (await daemon.rpc<Actionable[]>('conscious.list')).find((a) => a.title === 'Buy compost for the garden')!;
    await view.locator(`article[data-namespace="${CONSCIOUS_NAMESPACE}"][data-external-id="${own.id}"]`).waitFor();
    const body = await view.getByTestId('document-body').innerText();
    expect(body).toContain('Priority: normal');
    expect(body).toContain('From: Garden plan (inbox/garden-plan.md)');

    // Reloading the address opens the same document; Close leaves the tab as it was.
    await page.reload();
    await view.locator(`article[data-external-id="${own.id}"]`).waitFor();
    await view.getByRole('button', { name: 'Close the document' }).click();
    await view.waitFor({ state: 'detached' });
    expect(new URL(page.url()).hash).toBe('#/memory');
  });

  it('a delegation waits for the person: Accept makes it the bot’s task, Decline sends nothing; both fold into Answered', async () => {
    await openTab('Memory');
    writeFileSync(
      path.join(workspace, 'inbox', 'initech.md'),
      '# Initech renewal\n\nThe Initech contract renews on Monday; 4 trial seats are unused since March.\n',
    );
    await page.locator('[data-testid="memory-source"][data-namespace="inbox"] [data-testid="source-documents"]', { hasText: '5' }).waitFor();
    await page.getByRole('button', { name: 'Review now' }).click();
    const section = page.getByTestId('memory-delegations');
    const pending = section.locator('[data-testid="memory-delegation"][data-status="pending"]');
    await pending.nth(1).waitFor({ timeout: 30_000 });
    expect(await pending.count()).toBe(2);
    expect(await section.locator('h2').innerText()).toMatch(/^Delegate to a bot\?\s*2$/);
    // Proposed in the same review: their order is not the point, each row says what and for whom.
    const renewal = pending.filter({ hasText: 'Decide on the Initech renewal → @ops' });
    expect(await renewal.innerText()).toContain('Ask Initech for the renewal terms and tell me by Thursday.');
    expect(await pending.filter({ hasText: 'Cancel the Initech trial seats → @ops' }).innerText()).toContain('Cancel the unused Initech trial seats.');
    await screenshots(page, 'memory-delegations');
    expect(await contrastFailures(page), 'the delegation proposals').toEqual([]);
    // Nothing reached the bot by itself.
    expect(botCalls).toEqual([]);

    await section.getByRole('button', { name: 'Accept: Decide on the Initech renewal for @ops' }).click();
    await waitFor('the accepted delegation', async () => (await delegations()).some((d) => d.status === 'accepted'));
    const accepted = (await delegations()).find((d) => d.status === 'accepted')!;
    expect(accepted).toMatchObject({ todo_title: 'Decide on the Initech renewal', task_id: expect.any(String) });
    const thread = await daemon.rpc<ThreadView>('bots.thread', { id: accepted.thread_id });
    expect(thread.tasks.map((t) => t.id)).toContain(accepted.task_id);
    await waitFor('the bot’s run', async () => botCalls.length === 1);
    expect(botCalls[0]).toContain('Ask Initech for the renewal terms');

    await section.getByRole('button', { name: 'Decline: Cancel the Initech trial seats' }).click();
    await waitFor('the declined delegation', async () => (await delegations()).some((d) => d.status === 'declined'));
    await pending.first().waitFor({ state: 'detached' });
    expect(await section.innerText()).toContain('Nothing waiting for you.');
    await section.locator('details.settled summary').click();
    const answered = section.locator('details.settled [data-testid="memory-delegation"]');
    expect(await answered.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')).sort())).toEqual(['accepted', 'declined']);
    expect(await section.locator('details.settled').innerText()).toContain('accepted: a task of the bot (Bots tab)');
    // The declined one reached nobody.
    expect(botCalls).toHaveLength(1);
    expect(await cspViolations()).toEqual([]);
  });
});
