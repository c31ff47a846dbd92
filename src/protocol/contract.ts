/**
 * The one contract of every face (DESIGN.md "Faces"): a module's RPC methods (name → params
 * schema → result type) and its events (name → payload type). The daemon binds handlers to a
 * contract, the CLI's daemon client and the page call through it, and tests wait on its events.
 *
 * This folder is browser-safe: it imports zod and nothing else, so the page can import it.
 *
 *   export const tasksContract = defineContract<TasksEvents>()({
 *     methods: {
 *       'subconscious.tasks_list': method(z.strictObject({}), 'List all tasks.').returns<Task[]>(),
 *     },
 *     events: ['tasks.changed', 'tasks.log_changed'],
 *   });
 */
import type { z } from 'zod';

/** One RPC method: its params schema, a line for `rpc.methods`, and (in types only) its result. */
export interface MethodSpec<P extends z.ZodType = z.ZodType, R = unknown> {
  readonly params: P;
  readonly description: string;
  /** Old param name → its new name: still accepted for one release (one deprecation line in the log). */
  readonly renamed?: Readonly<Record<string, string>>;
  /** Never set: carries the result type. */
  readonly __result?: R;
}

/**
 * `method(params, description).returns<Result>()`. `renamed` keeps old param names working for a
 * release (the README's naming convention): the description says so, the dispatcher renames them.
 */
export function method<P extends z.ZodType>(
  params: P,
  description: string,
  opts: { renamed?: Readonly<Record<string, string>> } = {},
): { returns<R>(): MethodSpec<P, R> } {
  const renamed = opts.renamed && Object.keys(opts.renamed).length ? opts.renamed : undefined;
  const said = renamed
    ? ` Deprecated param names, accepted for one release: ${Object.entries(renamed)
        .map(([from, to]) => `${from} (now ${to})`)
        .join(', ')}.`
    : '';
  return { returns: () => ({ params, description: description + said, ...(renamed ? { renamed } : {}) }) };
}

export type MethodMap = { readonly [name: string]: MethodSpec };
/** Event name → payload. Payloads are plain JSON objects. */
export type EventMap = { [name: string]: Record<string, unknown> };

export interface Contract<M extends MethodMap = MethodMap, E extends EventMap = EventMap> {
  readonly methods: M;
  /** Every event the module emits (the names; the payload types live in `E`). */
  readonly events: readonly string[];
  /** Never set: carries the event map. */
  readonly __events?: E;
}

/**
 * Declare a contract. The event map is given explicitly and its names listed once, so a
 * missing or misspelt name is a type error: `defineContract<MyEvents>()({ methods, events })`.
 */
export function defineContract<E extends EventMap = Record<never, never>>() {
  return <const M extends MethodMap>(c: {
    methods: M;
    events: readonly [keyof E] extends [never] ? readonly [] : readonly (keyof E & string)[];
  }): Contract<M, E> => ({
    methods: c.methods,
    events: c.events as readonly (keyof E & string)[],
  });
}

export type MethodsOf<C> = C extends Contract<infer M, EventMap> ? M : never;
export type EventsOf<C> = C extends Contract<MethodMap, infer E> ? E : never;
/** What a caller sends (defaults may be left out). */
export type ParamsOf<S> = S extends { readonly params: infer P extends z.ZodType } ? z.input<P> : never;
/** What a handler receives (defaults filled in). */
export type ParsedParamsOf<S> = S extends { readonly params: infer P extends z.ZodType } ? z.output<P> : never;
export type ResultOf<S> = S extends { readonly __result?: infer R } ? R : never;

/** Merge several contracts' maps into one (the product's protocol, a test's protocol). */
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
export type MergedMethods<Cs extends readonly Contract[]> = Flatten<UnionToIntersection<MethodsOf<Cs[number]>>>;
export type MergedEvents<Cs extends readonly Contract[]> = Flatten<UnionToIntersection<EventsOf<Cs[number]>>>;
type Flatten<T> = { [K in keyof T]: T[K] };

/** An event as it travels (`GET /events`, the in-process bus): one member per event type. */
export type WireEvent<E extends EventMap> = { [K in keyof E & string]: { type: K; at: number; data: E[K] } }[keyof E & string];

/** The handlers a module gives for its contract, checked against params and result types. */
export type Handlers<M extends MethodMap> = {
  [K in keyof M & string]: (params: ParsedParamsOf<M[K]>) => Promise<ResultOf<M[K]>> | ResultOf<M[K]>;
};

/** A bound method, as the dispatcher serves it. */
export interface BoundMethod {
  readonly name: string;
  readonly params: z.ZodType;
  readonly description: string;
  /** Old param name → new name (see {@link MethodSpec.renamed}). */
  readonly renamed?: Readonly<Record<string, string>>;
  readonly handler: (params: never) => unknown;
}

/** Bind handlers to a contract: one `BoundMethod` per method, in the contract's order. */
export function implement<M extends MethodMap>(contract: Contract<M, EventMap> | { methods: M }, handlers: Handlers<M>): BoundMethod[] {
  return Object.keys(contract.methods).map((name) => {
    const spec = contract.methods[name]!;
    const handler = handlers[name as keyof M & string];
    if (typeof handler !== 'function') throw new Error(`no handler for RPC method ${name}`);
    return { name, params: spec.params, description: spec.description, handler, ...(spec.renamed ? { renamed: spec.renamed } : {}) };
  });
}
