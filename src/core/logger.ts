import pino from 'pino';

export type Logger = pino.Logger;

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);

/** One pino JSON line as a short line for a person at a terminal: `09:41:07 WARN tick failed world=tasks …`. */
export function humanLogLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const time = typeof rec.time === 'number' ? new Date(rec.time).toTimeString().slice(0, 8) : '';
  const level = LEVELS[rec.level as number] ?? String(rec.level ?? '');
  const fields = Object.entries(rec)
    .filter(([k, v]) => !SKIP.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`);
  return [time, level, String(rec.msg ?? ''), ...fields].filter(Boolean).join(' ');
}

/**
 * Logs to stderr: JSON lines (for collectors), or short human lines when stderr is a terminal.
 * `SUBCONSCIOUS_LOG_LEVEL` (default `info`, `silent` in tests); `SUBCONSCIOUS_LOG_FORMAT=json|human`.
 */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  const level = opts.level ?? process.env.SUBCONSCIOUS_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');
  const format = process.env.SUBCONSCIOUS_LOG_FORMAT ?? (process.stderr.isTTY ? 'human' : 'json');
  const base = { name: opts.name ?? 'subconscious', level };
  if (format !== 'human') return pino(base, pino.destination(2));
  return pino(base, { write: (line: string) => void process.stderr.write(`${humanLogLine(line)}\n`) });
}

export const silentLogger: Logger = pino({ level: 'silent' });
