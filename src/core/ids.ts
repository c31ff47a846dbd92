import { randomUUID } from 'node:crypto';

/** Id generator, injected so tests can make ids predictable. */
export type IdGen = () => string;

export const uuid: IdGen = () => randomUUID();

/** Predictable ids for tests: `prefix-1`, `prefix-2`, … */
export function sequentialIds(prefix = 'id'): IdGen {
  let n = 0;
  return () => `${prefix}-${++n}`;
}
