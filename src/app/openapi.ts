/**
 * The OpenAPI document of what an app serves (its methods as bound, its modules' events), with the
 * result and event schemas the build wrote beside the compiled protocol (`dist/protocol/schemas.json`,
 * devtools/protocol-schemas.ts). Built once per app: the methods do not change while it runs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApi, type ProtocolSchemas } from '../protocol/openapi.js';
import type { App } from './app.js';
import { appContracts } from './contracts.js';

const SCHEMAS = fileURLToPath(new URL('../protocol/schemas.json', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));

export function loadProtocolSchemas(file = SCHEMAS): ProtocolSchemas | null {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ProtocolSchemas) : null;
}

export function openApiDocument(app: Pick<App, 'rpc' | 'modules'>, schemas = loadProtocolSchemas()): Record<string, unknown> {
  const { version } = JSON.parse(readFileSync(PACKAGE, 'utf8')) as { version: string };
  const methods = app.rpc.list().flatMap(({ name, description }) => {
    const params = app.rpc.paramsOf(name);
    return params ? [{ name, description, params }] : [];
  });
  const events = [...appContracts, ...app.modules.map((m) => m.contract)].flatMap((c) => c.events);
  return buildOpenApi({ version, methods, events: [...new Set(events)], schemas });
}
