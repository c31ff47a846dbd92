/**
 * A bot message's text while it streams: every delta goes out at once (an event), the text is
 * written to the database at most every `flushMs` on the injected clock (so a killed daemon
 * keeps what was said up to the last write), and writes never overlap or land out of order.
 */
import { describeError, type Clock, type Logger } from '../core/index.js';

export class StreamWriter {
  private body = '';
  private written = '';
  private timer: AbortController | null = null;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly o: {
      clock: Clock;
      flushMs: number;
      write: (text: string) => Promise<void>;
      log: Logger;
    },
  ) {}

  get text(): string {
    return this.body;
  }

  push(delta: string): void {
    if (this.closed || !delta) return;
    this.body += delta;
    if (this.timer) return;
    const timer = (this.timer = new AbortController());
    this.o.clock.sleep(this.o.flushMs, timer.signal).then(
      () => {
        if (this.timer === timer) this.timer = null;
        void this.flush();
      },
      () => undefined,
    );
  }

  /** Write what is not written yet (after the writes already under way). */
  flush(): Promise<void> {
    this.chain = this.chain.then(async () => {
      const text = this.body;
      if (text === this.written) return;
      try {
        await this.o.write(text);
        this.written = text;
      } catch (err) {
        this.o.log.warn({ err: describeError(err) }, 'could not write a streaming message; the next flush retries');
      }
    });
    return this.chain;
  }

  /** Stop the timer and wait for every write; later pushes are ignored. */
  async close(): Promise<void> {
    this.closed = true;
    this.timer?.abort();
    this.timer = null;
    await this.chain;
  }
}
