/**
 * The heartbeat page tests' one setup: the scripted model server (the pulse answers `resume`
 * with the test's reason; the bot `@scout` answers from a queue, a call with nothing queued gets
 * a 400 naming it), the daemon in this process on a fake clock (src/cli/daemon.ts as `start`
 * runs it: scheduler, HTTP, page, CSP; tasks off, `tick_seconds = 15`, plus the test's config
 * lines), the bot scout, and Chromium on its page in the Bots tab with CSP violations recorded
 * (`cspViolations()`). Time moves only when the test says so (`daemon.advance`,
 * `daemon.advanceUntil`): one heartbeat tick at a time, each run to its end before the next.
 *
 * `[worlds.bots] next_job_delay_ms = 0`, as in the bots and heartbeat harnesses: the gap before
 * a job would otherwise wait on the fake clock (the gap has its own tests in test/bots/).
 */
import type { Page } from 'playwright-core';
import type { BotWithStatus, ThreadSummary } from '../../../src/protocol/bots.js';
import type { HeartbeatSnapshot } from '../../../src/protocol/heartbeat.js';
import { PULSE_SYSTEM } from '../../../src/worlds/heartbeat/pulse.js';
import { FakeClock } from '../../../src/core/clock.js';
import { startInProcessDaemon, type InProcessDaemon } from '../../support/daemon.js';
import { scriptedModelEnv, startModelServer, type ModelServer, type RecordedRequest, type ScriptedReply } from '../../support/model-server.js';
import { launchBrowser, recordCspViolations, type TestBrowser } from './browser.js';
import { ensurePageBuilt } from './page-build.js';

const PULSE_FIRST_LINE = PULSE_SYSTEM.split('\n')[0]!;

/** A pulse that asks the person whether to try a failed run again: the check-in the page tests answer. */
export const ASK_USER_PULSE: ScriptedReply = {
  json: {
    verdict: 'ask_user',
    taskId: null,
    reason: 'the run failed at the provider',
    instruction: 'Should I try the launch plan again, or leave it?',
    etaMinutes: 0,
    urgency: 'normal',
    confidence: 0.9,
  },
};

export const systemOf = (req: RecordedRequest): string =>
  (req.body?.messages ?? [])
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');

export interface HeartbeatPageOptions {
  /** Used in the 400s of calls nobody scripted. */
  name: string;
  /** What the pulse gives as its reason and instruction to resume. */
  pulse: { reason: string; instruction?: string };
  /** Lines of `[worlds.bots]` after `next_job_delay_ms = 0`. */
  botsConfig?: string[];
  /** Config lines after `[worlds.heartbeat] tick_seconds = 15` and the bots section. */
  config?: string[];
  /** The bot's description and tools. */
  bot: { description: string; tools?: string[] };
}

export interface HeartbeatPage {
  server: ModelServer;
  daemon: InProcessDaemon;
  clock: FakeClock;
  browser: TestBrowser;
  page: Page;
  scout: BotWithStatus;
  /** Every pulse request, in order. */
  pulses: RecordedRequest[];
  /** Every call of @scout's runs, in order. */
  botCalls: RecordedRequest[];
  /** @scout's next answers (FIFO). */
  botReplies: ScriptedReply[];
  snapshot(): Promise<HeartbeatSnapshot>;
  /** The heartbeat section of scout's page. */
  section(): ReturnType<Page['getByTestId']>;
  directThread(): Promise<ThreadSummary>;
  cspViolations(): Promise<string[]>;
  dispose(): Promise<void>;
}

export async function openHeartbeatPage(opts: HeartbeatPageOptions): Promise<HeartbeatPage> {
  await ensurePageBuilt();
  const pulses: RecordedRequest[] = [];
  const botCalls: RecordedRequest[] = [];
  const botReplies: ScriptedReply[] = [];
  const server = await startModelServer({ models: ['scripted-model'] });
  server.handle((req) => {
    const system = systemOf(req);
    if (system.startsWith(PULSE_FIRST_LINE)) {
      pulses.push(req);
      return {
        json: {
          verdict: 'resume',
          taskId: null,
          reason: opts.pulse.reason,
          instruction: opts.pulse.instruction ?? '',
          etaMinutes: 0,
          urgency: 'normal',
          confidence: 0.9,
        },
      };
    }
    if (/^You are .* \(@scout\)/.test(system)) {
      botCalls.push(req);
      return botReplies.shift() ?? { status: 400, message: `${opts.name}: no answer scripted for @scout` };
    }
    return { status: 400, message: `${opts.name}: an unexpected call (${system.slice(0, 60)})` };
  });
  // Starts at the real time, so the page (on the browser's own clock) reads the times as near.
  const clock = new FakeClock(Date.now());
  const daemon = await startInProcessDaemon({
    clock,
    config: [
      '[worlds.tasks]',
      'enabled = false',
      '',
      '[worlds.heartbeat]',
      'tick_seconds = 15',
      '',
      '[worlds.bots]',
      'next_job_delay_ms = 0',
      ...(opts.botsConfig ?? []),
      '',
      ...(opts.config ?? []),
      '',
    ].join('\n'),
    env: scriptedModelEnv(server),
  });
  const scout = await daemon.rpc<BotWithStatus>('bots.create', {
    name: 'scout',
    label: 'Scout',
    description: opts.bot.description,
    ...(opts.bot.tools && { tools: opts.bot.tools }),
  });
  const browser = await launchBrowser();
  const { page } = await browser.newPage();
  const cspViolations = await recordCspViolations(page);
  await page.goto(daemon.pageUrl);
  await page.locator('[data-testid="live-state"][data-state="open"]').waitFor();
  await page.getByRole('tab', { name: 'Bots' }).click();
  await page.locator('[data-testid="bot-item"][data-bot-name="scout"]').click();
  return {
    server,
    daemon,
    clock,
    browser,
    page,
    scout,
    pulses,
    botCalls,
    botReplies,
    snapshot: () => daemon.rpc<HeartbeatSnapshot>('bots.heartbeat_snapshot', { bot_ids: [scout.id] }),
    section: () => page.getByTestId('bot-heartbeat'),
    directThread: async () => (await daemon.rpc<ThreadSummary[]>('bots.threads_list', { bot_id: scout.id })).find((t) => t.kind === 'direct')!,
    cspViolations,
    dispose: async () => {
      await browser.close();
      await daemon.dispose();
      await server.close();
    },
  };
}
