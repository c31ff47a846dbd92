/**
 * Webhook delivery (issue 18 §6): at least once, in the order they were written. Each due
 * dispatch is taken with a compare-and-set (two daemons never post it at the same time), posted
 * with its signature and its idempotency key, and then:
 *   2xx       delivered — and delivered again if no `runtime.ack` comes within `ack_seconds`
 *   anything  retried with exponential backoff on the daemon's clock (`retry_base_seconds`,
 *   else      doubling, at most `retry_max_seconds`), the error kept on the dispatch and the runtime
 * A dispatch stops being delivered when it is acknowledged or no longer wanted (the person wrote,
 * its claim was taken over, its task finished, it expired). The loop sleeps until the next due
 * delivery or the next lease to end (the sweep's), and wakes at once when a dispatch is written here.
 */
import { describeError, type Logger } from '../core/index.js';
import type { RuntimeWebhook } from '../protocol/runtimes.js';
import { WEBHOOK_ATTEMPT_HEADER, WEBHOOK_EVENT_HEADER, WEBHOOK_IDEMPOTENCY_HEADER, WEBHOOK_SIGNATURE_HEADER } from '../protocol/runtimes.js';
import type { RuntimeCore } from './core.js';
import { num } from './rows.js';
import type { RuntimesService } from './service.js';
import { readSecret, signatureHeader } from './signature.js';
import { UNACKED_STATES, type DispatchRow } from './store.js';

/** The loop looks at least this often (the sweep of leases), and waits at least this long between passes. */
const IDLE_MS = 5000;
const MIN_WAIT_MS = 250;
const BATCH = 20;

export interface DeliveryDeps {
  core: RuntimeCore;
  service: RuntimesService;
  fetch: typeof fetch;
  userAgent: string;
  log: Logger;
}

export class Delivery {
  private stopped = true;
  private loop: Promise<void> | null = null;
  private again = false;
  private sleeping: AbortController | null = null;
  private readonly onWake = () => {
    this.again = true;
    this.sleeping?.abort();
  };

  constructor(private readonly d: DeliveryDeps) {}

  /** The backoff before the retry after `failures` failed deliveries (1, 2, …). */
  backoffMs(failures: number): number {
    const c = this.d.core.d.config;
    return Math.min(c.retry_max_seconds, c.retry_base_seconds * 2 ** Math.max(0, failures - 1)) * 1000;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.d.core.wake.add(this.onWake);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.d.core.wake.delete(this.onWake);
    this.sleeping?.abort();
    await this.loop;
    this.loop = null;
  }

  private async run(): Promise<void> {
    const { core } = this.d;
    let immediate = 0;
    while (!this.stopped) {
      this.again = false;
      try {
        await this.d.service.sweep();
        await this.deliverDue();
      } catch (err) {
        this.d.log.warn({ err: describeError(err) }, 'runtimes: a delivery pass failed; the next one tries again');
      }
      if (this.stopped) break;
      if (this.again) continue;
      const [due, deadline] = await Promise.all([core.store.nextDue().catch(() => null), core.store.nextDeadline().catch(() => null)]);
      // A lease that ends or an ask that expires is swept then (+1: the sweep takes what ended before now).
      const times = [due, deadline === null ? null : deadline + 1].filter((t): t is number => t !== null);
      const next = times.length ? Math.min(...times) : null;
      // Due already (the clock moved while this pass ran): again at once, a few times, never a spin.
      if (next !== null && next <= core.now() && immediate++ < 3) continue;
      immediate = 0;
      const wait = next === null ? IDLE_MS : Math.min(IDLE_MS, Math.max(MIN_WAIT_MS, next - core.now()));
      // Stopped (or woken) while the reads above ran: no sleep (nothing is left to abort it).
      if (this.stopped) break;
      if (this.again) continue;
      this.sleeping = new AbortController();
      try {
        await core.d.clock.sleep(wait, this.sleeping.signal);
      } catch {
        // woken: a dispatch was written, or stop
      }
      this.sleeping = null;
    }
  }

  /** One pass: every webhook delivery due now (tests call it too). Resolves to how many were posted. */
  async deliverDue(): Promise<number> {
    const { core } = this.d;
    const due = await core.store.due(core.now(), { delivery: 'webhook', limit: BATCH });
    const posted = await Promise.all(due.map((row) => this.deliverOne(row)));
    return posted.filter(Boolean).length;
  }

  private async deliverOne(row: DispatchRow): Promise<boolean> {
    const { core } = this.d;
    const { store } = core;
    const host = await store.host(row.runtime_id);
    if (!host || host.delivery !== 'webhook' || !host.webhook_url) return false;
    const config = core.d.config;
    const timeoutMs = config.delivery_timeout_seconds * 1000;
    const now = core.now();
    // Taken for this post (another daemon's pass skips it until it is due again).
    const taken = await store.updateDispatch(
      row.id,
      { next_attempt_at: now + timeoutMs + 5000, deliveries: num(row.deliveries) + 1 },
      { version: num(row.version), states: UNACKED_STATES },
    );
    if (!taken) return false;
    const attempt = num(taken.deliveries);
    const payload: RuntimeWebhook = { type: 'runtime.dispatch', delivery: attempt, sent_at: now, dispatch: core.wire(taken) };
    const body = JSON.stringify(payload);
    let error: string | null = null;
    try {
      const secret = readSecret(host, core.d.env);
      const res = await this.d.fetch(host.webhook_url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.d.userAgent,
          [WEBHOOK_SIGNATURE_HEADER]: signatureHeader(secret, body, now),
          [WEBHOOK_IDEMPOTENCY_HEADER]: taken.id,
          [WEBHOOK_ATTEMPT_HEADER]: String(attempt),
          [WEBHOOK_EVENT_HEADER]: `dispatch.${taken.kind}`,
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 200 || res.status > 299) error = `the webhook answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    } catch (err) {
      const name = (err as { name?: string }).name;
      error =
        name === 'TimeoutError'
          ? `the webhook did not answer within ${config.delivery_timeout_seconds} s`
          : `the webhook could not be reached: ${describeError(err)}`;
    }
    const after = core.now();
    if (error === null) {
      // Acknowledged meanwhile (the runtime acked before it answered): nothing more to write.
      const delivered = await store.updateDispatch(
        taken.id,
        { state: 'delivered', delivered_at: after, next_attempt_at: after + config.ack_seconds * 1000, last_error: null },
        { states: UNACKED_STATES },
      );
      core.emitDispatch(delivered ?? (await store.dispatch(taken.id)));
      if (host.last_delivery_error !== null) await store.setDeliveryError(host.id, null);
      return true;
    }
    const next = after + this.backoffMs(attempt);
    const failed = await store.updateDispatch(taken.id, { next_attempt_at: next, last_error: error.slice(0, 500) }, { states: UNACKED_STATES });
    core.emitDispatch(failed);
    await store.setDeliveryError(
      host.id,
      `${error} (dispatch ${taken.id}, delivery ${attempt}; next try in ${Math.round((next - after) / 1000)} s)`.slice(0, 500),
    );
    this.d.log.warn(
      { runtime: host.id, dispatch: taken.id, delivery: attempt, retry_in_ms: next - after, error },
      'runtimes: a webhook delivery failed; it is retried',
    );
    return true;
  }
}
