/**
 * JSON-RPC 2.0 over `POST /rpc` with the bearer token. Failures come back as one of three
 * errors the shell can tell apart: no/invalid token, daemon unreachable, or the method's own
 * error (with the server's code and hint).
 */
// The client alone (no contract schemas): the page bundle carries no zod, whose compiled
// validators would need `eval`, which the page's Content-Security-Policy refuses.
import { createRpcClient, type RpcCall } from '../../../src/protocol/client.js';
import type { MethodMap, ProductMethods } from '../../../src/protocol/index.js';
import { getToken } from './token.js';

export class UnauthorizedError extends Error {
  constructor() {
    super('The daemon refused the token.');
    this.name = 'UnauthorizedError';
  }
}

export class UnreachableError extends Error {
  constructor(detail: string) {
    super(`The daemon did not answer (${detail}).`);
    this.name = 'UnreachableError';
  }
}

export class RpcError extends Error {
  readonly rpcCode: number;
  readonly code: string | undefined;
  readonly hint: string | undefined;
  /** The parameter the daemon refused (its `details.field`), so a form can mark that input. */
  readonly field: string | undefined;
  constructor(rpcCode: number, message: string, data: unknown) {
    super(message);
    this.name = 'RpcError';
    this.rpcCode = rpcCode;
    const d = (typeof data === 'object' && data !== null ? data : {}) as { code?: unknown; hint?: unknown; field?: unknown };
    this.code = typeof d.code === 'string' ? d.code : undefined;
    this.hint = typeof d.hint === 'string' ? d.hint : undefined;
    this.field = typeof d.field === 'string' ? d.field : undefined;
  }
}

export const METHOD_NOT_FOUND = -32601;

/** What the shell wants to hear about every call: did the daemon answer, was the token good. */
export type ConnectionSignal = 'ok' | 'unauthorized' | 'unreachable';
const listeners = new Set<(s: ConnectionSignal) => void>();

export function onConnectionSignal(fn: (s: ConnectionSignal) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function signal(s: ConnectionSignal): void {
  for (const fn of listeners) fn(s);
}

let nextId = 1;

/** The raw transport: one JSON-RPC call over `POST /rpc` with the page's token. */
export async function sendRpc(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
  const token = getToken();
  if (!token) {
    signal('unauthorized');
    throw new UnauthorizedError();
  }
  let res: Response;
  try {
    res = await fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', method, params, id: nextId++ }),
    });
  } catch (err) {
    signal('unreachable');
    throw new UnreachableError(err instanceof Error ? err.message : String(err));
  }
  if (res.status === 401 || res.status === 403) {
    // A refusal of a token the page has since replaced (a call in flight when a person pasted a
    // new one) says nothing about the new token: only a refusal of the current one signals.
    if (getToken() === token) signal('unauthorized');
    throw new UnauthorizedError();
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    // a proxy or a dying daemon answering with HTML/nothing
    signal('unreachable');
    throw new UnreachableError(`HTTP ${res.status} without a JSON-RPC answer`);
  }
  signal('ok');
  const msg = body as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
  if (msg.error) throw new RpcError(msg.error.code, msg.error.message, msg.error.data);
  return msg.result;
}

/** A typed client for any contract's methods (a module's tests use it with their own). */
export function createPageClient<M extends MethodMap>(): RpcCall<M> {
  return createRpcClient<M>(sendRpc);
}

/** The page's client: every method of the shipped daemon, typed by the protocol. */
export const call: RpcCall<ProductMethods> = createPageClient<ProductMethods>();

/** One line for a person: the message plus the server's hint, if any. */
export function explain(err: unknown): string {
  if (err instanceof RpcError) return err.hint ? `${err.message} — ${err.hint}` : err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
