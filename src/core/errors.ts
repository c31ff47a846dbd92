/**
 * One error base class for the whole project. `code` is a stable string that callers
 * (RPC clients, the CLI, tests) may switch on; `hint` says what to do about it.
 *
 * Codes in use:
 *   config_invalid      a config key is wrong (message names the key and the reason)
 *   store_unavailable   the database could not be opened or migrated
 *   recall_failed       no namespace of memory could be read for a run (it fails; its cursor stays)
 *   invalid_params      bad input at an edge (RPC params, CLI args); names the field
 *   not_found           the thing named does not exist
 *   conflict            the request contradicts the current state (e.g. approving twice)
 *   forbidden           refused by a rule (e.g. removing a system task)
 *   world_off           a world that is off was asked to run (message says why and how to switch it on)
 *   model_unreachable   the model endpoint did not answer a connection
 *   model_timeout       the model call took longer than its timeout
 *   model_rate_limit    transient 429 (retried before it surfaces)
 *   model_rate_cap      permanent: the request can never fit the provider's limit (413, TPM)
 *   model_no_tools      the model does not support tool calls
 *   model_malformed     the model's output did not parse against the expected schema
 *   model_truncated     the model ran out of tokens (finish_reason "length"): the cut reply is not used; raise the key named
 *   model_error         any other provider failure (5xx, bad request)
 *   cancelled           the operation was aborted
 *   tick_timeout        a tick ran past its timeout
 *   graph_invalid       a state graph is mis-wired (or a router returned an undeclared target)
 *   graph_step_limit    a graph run exceeded its step limit (a cycle)
 *   mcp_unavailable     an MCP tool server could not be started or died during a call (restarted on next use)
 *   source_unreachable  a memory source failed its test connection; details.failure says which step (host, tls, auth, folder)
 *   over_budget         a request (a batch) used up its running time; its remaining calls did not run: send them again
 */
export class SubconsciousError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, opts: { hint?: string | undefined; cause?: unknown; details?: Record<string, unknown> | undefined } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SubconsciousError';
    this.code = code;
    this.hint = opts.hint;
    this.details = opts.details;
  }

  /** Message plus what to do, for people reading a terminal or a banner. */
  explain(): string {
    return this.hint ? `${this.message} — ${this.hint}` : this.message;
  }
}

export function isSubconsciousError(err: unknown, code?: string): err is SubconsciousError {
  return err instanceof SubconsciousError && (code === undefined || err.code === code);
}

/** A short, single-line description of any thrown value. */
export function describeError(err: unknown): string {
  if (err instanceof SubconsciousError) return err.explain();
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
