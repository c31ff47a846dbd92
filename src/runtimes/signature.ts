/**
 * The webhook's signature (issue 18 §6): `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`
 * with the runtime's secret, over the exact bytes sent. A receiver recomputes it over the raw body
 * it got, compares in constant time, and refuses a timestamp older than a few minutes (a replay).
 * `verifyWebhookSignature` in `subconscious-engine/client` does that with WebCrypto.
 *
 * The secret is named at registration (`secret_env`, `secret_file`) and read here at each
 * delivery, so it is never stored in the database and can be rotated in place.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SubconsciousError } from '../core/index.js';

/** Shorter secrets are refused at registration: a guessable key signs nothing. */
export const MIN_SECRET_CHARS = 16;

export function signatureHeader(secret: string, body: string, atMs: number): string {
  const t = Math.floor(atMs / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

/** The daemon's own check (tests, a runtime written in Node): the same rules as the client's. */
export function signatureValid(secret: string, body: string, header: string | null | undefined, nowMs: number, toleranceSeconds = 300): boolean {
  if (!header) return false;
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1');
  if (!Number.isInteger(t) || !v1 || Math.abs(nowMs / 1000 - t) > toleranceSeconds) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  const given = Buffer.from(v1);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface SecretSource {
  secret_env: string | null;
  secret_file: string | null;
}

/** Read the runtime's secret where it was named; a missing or short one is `invalid_params` (at registration) naming it. */
export function readSecret(src: SecretSource, env: NodeJS.ProcessEnv): string {
  let secret: string | undefined;
  let where: string;
  if (src.secret_env) {
    where = `the daemon's environment variable ${src.secret_env}`;
    secret = env[src.secret_env];
  } else if (src.secret_file) {
    where = `the file ${src.secret_file}`;
    try {
      secret = readFileSync(src.secret_file, 'utf8');
    } catch (err) {
      throw new SubconsciousError(
        'invalid_params',
        `delivery.secret_file: ${where} cannot be read by the daemon (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        {
          hint: 'Name a file the daemon can read, holding the webhook secret (the same one your runtime verifies with).',
          details: { field: 'delivery.secret_file' },
        },
      );
    }
  } else {
    throw new SubconsciousError('invalid_params', 'delivery: a webhook needs a secret (secret_env or secret_file)', { details: { field: 'delivery' } });
  }
  secret = secret?.trim();
  const field = src.secret_env ? 'delivery.secret_env' : 'delivery.secret_file';
  if (!secret) {
    throw new SubconsciousError('invalid_params', `${field}: ${where} holds no secret`, {
      hint: `Set it (at least ${MIN_SECRET_CHARS} characters) where the daemon runs, and give your runtime the same value.`,
      details: { field },
    });
  }
  if (secret.length < MIN_SECRET_CHARS) {
    throw new SubconsciousError('invalid_params', `${field}: the secret in ${where} is shorter than ${MIN_SECRET_CHARS} characters`, {
      hint: 'Use a long random value, e.g. `openssl rand -hex 32`.',
      details: { field },
    });
  }
  return secret;
}
