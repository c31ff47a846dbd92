/**
 * A JSON-RPC response as the CLI reports it: the result, or the error a person reads. Commands
 * call the daemon when one runs and the store directly when none does; both answers go through
 * here, so the same mistake prints the same line either way, and a rejected parameter reads
 * "title: must not be empty" rather than "Invalid params for subconscious.tasks_add: … [rpc_error]".
 */
import { SubconsciousError } from '../core/errors.js';
import { RPC_INVALID_PARAMS, RPC_METHOD_NOT_FOUND, type RpcDispatcher, type RpcError } from '../core/rpc.js';

interface ErrorData {
  code?: string;
  hint?: string;
  issues?: { field: string; message: string }[];
}

/** The result of a response body, or a thrown SubconsciousError naming what is wrong. */
export function rpcResult(method: string, body: { result?: unknown; error?: RpcError }): unknown {
  if (!body.error) return body.result;
  throw rpcErrorToError(method, body.error);
}

export function rpcErrorToError(method: string, error: RpcError): SubconsciousError {
  const data = (typeof error.data === 'object' && error.data !== null ? error.data : {}) as ErrorData;
  // A handler's own error already says what is wrong in a person's words.
  if (data.code) return new SubconsciousError(data.code, error.message, data.hint ? { hint: data.hint } : {});
  if (error.code === RPC_INVALID_PARAMS && data.issues?.length) {
    const lines = data.issues.map((i) => (i.field === '(params)' ? i.message : `${i.field}: ${i.message}`));
    return new SubconsciousError('invalid_params', lines.join('; '));
  }
  if (error.code === RPC_METHOD_NOT_FOUND) {
    return new SubconsciousError('not_found', `the daemon does not know ${method}`, { hint: 'it may be an older version: restart it (subconscious start)' });
  }
  // An internal failure (a bug): the message names the method, which a report needs.
  return new SubconsciousError('rpc_error', error.message);
}

/** Call a method on this process's dispatcher, reporting errors exactly as a daemon's are. */
export async function callInProcess(rpc: RpcDispatcher, method: string, params: unknown): Promise<unknown> {
  const response = await rpc.handle({ jsonrpc: '2.0', id: 1, method, params });
  if (!response || Array.isArray(response)) throw new SubconsciousError('rpc_error', `${method} gave no single answer`);
  return rpcResult(method, response);
}
