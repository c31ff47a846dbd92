/** The model layer's public surface. Everything above `llm/` calls models only through `Llm`. */
export type * from './types.js';
export { createLlm, type CreateLlmOptions, type LlmService } from './llm.js';
export type { ProviderModel } from './meter.js';
export { dryRunModel, type DryRunModelOptions, type DryRunRequest } from './dry-run-model.js';
export {
  Ledger,
  type CallRecord,
  type LedgerCall,
  type LedgerGroup,
  type LedgerSummary,
  type UsageTotals,
  type LedgerDimension,
  type AggregateQuery,
} from './ledger.js';
export { ModelError, isModelError, classifyModelError, parseRetryAfter, type ErrorContext } from './errors.js';
export { parseStructured, extractJson, schemaInstruction } from './structured.js';
export {
  fence,
  stripControlLines,
  cleanLine,
  estimateTokens,
  UNTRUSTED_PREAMBLE,
  CONTROL_PREFIXES,
  DEFAULT_FENCE_MAX_CHARS,
  type FenceOptions,
} from './fence.js';
export { MAX_REPLY_CHARS, capReply } from './reply-cap.js';
export { RATE_LIMIT_DELAYS_MS, MAX_RETRY_AFTER_MS } from './retry.js';
export { PROBE_TIMEOUT_MS, PROBE_CACHE_MS } from './probe.js';
export { usageRpcHandlers, usageSummary, usageCalls } from './usage-rpc.js';
export type { LedgerTables, ModelCallsTable } from './tables.js';
