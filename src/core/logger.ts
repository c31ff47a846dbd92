import pino from 'pino';

export type Logger = pino.Logger;

/** JSON logs to stderr; `SUBCONSCIOUS_LOG_LEVEL` (default `info`, `silent` in tests). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  const level = opts.level ?? process.env.SUBCONSCIOUS_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');
  return pino({ name: opts.name ?? 'subconscious', level }, pino.destination(2));
}

export const silentLogger: Logger = pino({ level: 'silent' });
