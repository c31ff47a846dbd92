/**
 * A source's secret (an IMAP password or OAuth2 access token, a CalDAV password) from an
 * environment variable or a file — never from subconscious.toml itself. Read at each connection,
 * so a rotated token file is picked up without a restart.
 */
import { readFileSync } from 'node:fs';
import { SubconsciousError } from '../../core/errors.js';

export interface SecretRef {
  password_env?: string | undefined;
  password_file?: string | undefined;
}

/**
 * A secret from the daemon's environment; `setting` names the key that points at it (for the
 * error: `password_env`, `env_from.NOTION_TOKEN`).
 */
export function envSecret(variable: string, what: string, setting: string, otherwise = ''): string {
  const value = process.env[variable];
  if (value === undefined || value === '')
    throw new SubconsciousError('config_invalid', `${what}: the environment variable ${variable} (${setting}) is not set.`, {
      hint: `Set ${variable} in the daemon's environment${otherwise}.`,
    });
  return value;
}

/** The secret, trimmed of a trailing newline; a typed `config_invalid` error says which is missing. */
export function readSecret(ref: SecretRef, what: string, resolve: (p: string) => string = (p) => p): string {
  if (ref.password_env !== undefined) return envSecret(ref.password_env, what, 'password_env', ', or use password_file');
  if (ref.password_file !== undefined) {
    const file = resolve(ref.password_file);
    try {
      return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new SubconsciousError('config_invalid', `${what}: cannot read the password file ${file} (password_file): ${(err as Error).message}`, {
        hint: 'Check that the file exists and the daemon may read it (chmod 600 is enough).',
      });
    }
  }
  throw new SubconsciousError('config_invalid', `${what}: no password_env or password_file.`, {
    hint: 'Name an environment variable or a file holding the secret.',
  });
}
