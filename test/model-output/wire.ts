/**
 * What every corpus test checks on the wire: the model server saw `max_tokens` on every call and a
 * JSON schema in `response_format` on every structured one.
 */
import { expect } from 'vitest';
import type { RecordedRequest } from '../support/model-server.js';

export function expectGuardedWire(requests: readonly RecordedRequest[], structured: (req: RecordedRequest) => boolean = () => true): void {
  expect(requests.length).toBeGreaterThan(0);
  for (const req of requests) {
    expect(req.body?.max_tokens, 'max_tokens on every call').toEqual(expect.any(Number));
    if (!structured(req)) continue;
    const format = req.body?.response_format as { type?: string; json_schema?: { schema?: unknown } } | undefined;
    expect(format?.type, 'response_format json_schema on every structured call').toBe('json_schema');
    expect(format?.json_schema?.schema, 'the schema itself').toEqual(expect.objectContaining({}));
  }
}
