/**
 * JSON-RPC 2.0 dispatch (single calls and batches). Methods are registered with a zod schema
 * for their params; bad params get -32602 naming the field. Application errors
 * (`SubconsciousError`) get -32000 with `data: { code, hint }`. A handler that throws anything
 * else gets -32603 and the server keeps serving.
 */
import { z } from 'zod';
import type { BoundMethod } from '../protocol/contract.js';
import { SubconsciousError, describeError } from './errors.js';

export const RPC_PARSE_ERROR = -32700;
export const RPC_INVALID_REQUEST = -32600;
export const RPC_METHOD_NOT_FOUND = -32601;
export const RPC_INVALID_PARAMS = -32602;
export const RPC_INTERNAL_ERROR = -32603;
export const RPC_APP_ERROR = -32000;

/** A method as the dispatcher serves it: bound to its contract with `implement` (protocol/). */
export type RpcMethod = BoundMethod;

type Id = string | number | null;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcResponse = { jsonrpc: '2.0'; id: Id; result: unknown } | { jsonrpc: '2.0'; id: Id; error: RpcError };

const requestShape = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
});

export class RpcDispatcher {
  private readonly methods = new Map<string, RpcMethod>();

  constructor(methods: RpcMethod[] = []) {
    for (const m of methods) this.add(m);
  }

  add(method: RpcMethod): void {
    if (this.methods.has(method.name)) throw new Error(`RPC method ${method.name} registered twice`);
    this.methods.set(method.name, method);
  }

  list(): { name: string; description: string }[] {
    return [...this.methods.values()].map((m) => ({ name: m.name, description: m.description })).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Handle a raw request body (text). Returns null when nothing is to be sent (notifications only). */
  async handleText(body: string): Promise<RpcResponse | RpcResponse[] | null> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return failure(null, RPC_PARSE_ERROR, 'Parse error: the body is not valid JSON.');
    }
    return this.handle(parsed);
  }

  async handle(payload: unknown): Promise<RpcResponse | RpcResponse[] | null> {
    if (Array.isArray(payload)) {
      if (payload.length === 0) return failure(null, RPC_INVALID_REQUEST, 'Invalid Request: empty batch.');
      const responses = await Promise.all(payload.map((p) => this.one(p)));
      const sent = responses.filter((r): r is RpcResponse => r !== null);
      return sent.length ? sent : null;
    }
    return this.one(payload);
  }

  /** Call a method directly (the CLI and tests use this; same validation as over HTTP). */
  async call(name: string, params: unknown = {}): Promise<unknown> {
    const res = await this.one({ jsonrpc: '2.0', method: name, params, id: 0 });
    if (res && 'error' in res) {
      const data = (res.error.data ?? {}) as { code?: string; hint?: string };
      throw new SubconsciousError(data.code ?? 'rpc_error', res.error.message, data.hint ? { hint: data.hint } : {});
    }
    return res?.result;
  }

  private async one(raw: unknown): Promise<RpcResponse | null> {
    const req = requestShape.safeParse(raw);
    if (!req.success) {
      const id = isObject(raw) && (typeof raw.id === 'string' || typeof raw.id === 'number') ? raw.id : null;
      return failure(id, RPC_INVALID_REQUEST, 'Invalid Request: expected {"jsonrpc":"2.0","method":string,"params"?:object,"id"?}.');
    }
    const { method: name, params, id } = req.data;
    const isNotification = id === undefined;
    const method = this.methods.get(name);
    if (!method) return isNotification ? null : failure(id, RPC_METHOD_NOT_FOUND, `Method not found: ${name}`);
    const input = params === undefined ? {} : params;
    const checked = method.params.safeParse(input);
    if (!checked.success) {
      const issues = checked.error.issues.map((i) => ({ field: i.path.join('.') || '(params)', message: i.message }));
      const first = issues[0];
      return isNotification
        ? null
        : failure(id, RPC_INVALID_PARAMS, `Invalid params for ${name}: ${first ? `${first.field}: ${first.message}` : 'rejected'}`, { issues });
    }
    try {
      const result = await (method.handler as (params: unknown) => unknown)(checked.data);
      return isNotification ? null : { jsonrpc: '2.0', id, result: result ?? null };
    } catch (err) {
      if (isNotification) return null;
      if (err instanceof SubconsciousError) {
        const code = err.code === 'invalid_params' ? RPC_INVALID_PARAMS : RPC_APP_ERROR;
        return failure(id, code, err.message, { code: err.code, hint: err.hint, ...(err.details ?? {}) });
      }
      return failure(id, RPC_INTERNAL_ERROR, `Internal error in ${name}: ${describeError(err)}`);
    }
  }
}

function failure(id: Id, code: number, message: string, data?: unknown): RpcResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
