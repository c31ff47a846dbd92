/**
 * A typed JSON-RPC client over any transport (the page's `fetch`, the CLI's daemon client, an
 * in-process dispatcher in tests): `call('subconscious.tasks_add', { title })` is checked against
 * the contract's params and resolves to its result type.
 */
import type { MethodMap, ParamsOf, ResultOf } from './contract.js';

export type Transport = (method: string, params: Record<string, unknown>) => Promise<unknown>;

/** Methods whose params may be left out entirely (every field optional). */
type OptionalParams<S> = Record<never, never> extends ParamsOf<S> ? [params?: ParamsOf<S>] : [params: ParamsOf<S>];

export type RpcCall<M extends MethodMap> = <K extends keyof M & string>(method: K, ...params: OptionalParams<M[K]>) => Promise<ResultOf<M[K]>>;

export function createRpcClient<M extends MethodMap>(transport: Transport): RpcCall<M> {
  return (<K extends keyof M & string>(method: K, ...params: OptionalParams<M[K]>) =>
    transport(method, (params[0] ?? {}) as Record<string, unknown>) as Promise<ResultOf<M[K]>>) as RpcCall<M>;
}
