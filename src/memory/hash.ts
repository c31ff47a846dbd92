/** Content hashes: what decides whether storing a document again is a change. */
import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so equal metadata always hashes equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The hash of everything a document holds (not its times). */
export function documentHash(doc: { source_kind: string; title: string; body: string; metadata: Record<string, unknown> }): string {
  return sha256Hex(canonicalJson([doc.source_kind, doc.title, doc.body, doc.metadata]));
}
