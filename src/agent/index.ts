/**
 * The agent layer: full-effort runs (issue 3). A run is the `agent` model working with MCP
 * tools for many steps, under a permission mode, the approval gate, a step limit and a time cap.
 *
 * Wiring (app/):
 *   const mcp = new McpManager({ servers: config.mcp.servers, clock, log, events }); // `mcp.changed` events
 *   const approvals = new ApprovalStore({ db, clock, ids, events });
 *   const runner = new AgentRunner({ llm, mcp, approvals, clock, ids, events, log });
 *   await runner.recover();                       // pending approvals of dead runs → expired
 *   rpc.add(...agentRpcMethods({ approvals, mcp })) // approvals.list/answer (approve/deny), mcp.servers
 *
 * Using it (a world, the bots runtime) — this API is stable:
 *   const run = runner.start({
 *     world: 'tasks', purpose: 'task_execute', title: task.title,
 *     system, prompt,                 // or messages: ModelMessage[] (the history)
 *     mode: 'full' | 'analysis' | 'tainted',
 *     attended: false,                // unattended: approvals expire after 10 minutes
 *     approvalExpiryMs?,              // this run's unattended expiry (default the runner's)
 *     onApprovalRequested?,           // (approval) => reason | undefined: a reason fails fast
 *                                     // (nobody can answer) instead of waiting out the expiry
 *     maxSteps?, capMs?,              // defaults 25 steps, 20 minutes (injected Clock)
 *     signal?,                        // an outside abort → cancelled ('external')
 *     reads?,                         // outside text in the prompt, shown on its approvals
 *     decided?,                       // {server, tool, arguments, response?}: a call a person
 *                                     // already answered, made (or answered) before step one
 *     beforeToolCall?,                // awaited before each tool call runs (a host records it
 *                                     // first: a throw fails the call, which never runs)
 *   });
 *   approvals.answer(id, {answer: 'accept'|'edit'|'respond'|'ignore', arguments?, text?, by?, via?})
 *     // edit: the call runs with the changed arguments (checked against the tool's schema);
 *     // respond: it does not run and the model reads the person's text and continues
 *   run.events.subscribe((e) => …);   // text-delta, tool-call, tool-result, approval-requested,
 *                                     // step-finished, settled (also `agent.run` on the EventBus)
 *   run.cancel('user' | 'preempted' | 'external');
 *   const outcome = await run.settled; // never rejects:
 *   // { status: 'done'|'failed'|'cancelled', errorKind?, error?, text (control lines stripped),
 *   //   controls (MEMORY/TEAM_MEMORY/HANDOFF/FOLLOWUP/BLOCKED/RECOMMENDED ACTION), checkpoint,
 *   //   steps (model calls = ledger rows), stepLimitReached, toolSteps }
 *
 * Settle precedence (seed 2 §7.5): user stop → cancelled; preempted → failed/preempted;
 * approval_expired | timeout | provider | rate_limit | unknown → failed with that kind;
 * any other abort → cancelled; the step limit reached while the model still called tools →
 * failed/unknown (`stepLimitReached`, the message says to raise [agent] max_steps); else done
 * (a final answer at exactly the limit is done). A tool server that dies mid-call fails the run
 * (`unknown`, the message names the server) and is restarted on its next use.
 */
export { AgentRunner, DEFAULT_MAX_STEPS, DEFAULT_RUN_CAP_MS } from './runner.js';
export type { AgentRunnerOptions, BeforeToolCall, DecidedCall, ReadItem, Run, RunEvent, RunEventType, RunEvents, RunOptions, RunOutcome } from './runner.js';
export { ApprovalStore, checkToolArguments, APPROVAL_ANSWERS, APPROVAL_STATES, UNATTENDED_APPROVAL_MS } from './approvals.js';
export type {
  AnswerInput,
  Approval,
  ApprovalAnswer,
  ApprovalAnswerKind,
  ApprovalContext,
  ApprovalState,
  ApprovalStoreOptions,
  NewApproval,
} from './approvals.js';
export { McpManager, mcpServerSchema, mcpServersSchema, mcpToolOverrideSchema, exposedToolName, RESTART_BACKOFF_MS } from './mcp.js';
export type { McpCallResult, McpManagerOptions, McpServerConfig, McpServerHealth, McpServerInput, McpServerStatus, McpToolInfo } from './mcp.js';
export { PERMISSION_MODES, permissionModeSchema, toolPolicy } from './permissions.js';
export type { PermissionMode, ToolAccess, ToolPolicy } from './permissions.js';
export { parseControlLines, ControlLineFilter, MAX_FOLLOWUP_MS } from './control-lines.js';
export type { ControlLine, FollowUpDue, ParsedControlLines } from './control-lines.js';
export { buildCheckpoint, formatSteps, head, CHECKPOINT_SUMMARY_MAX, CHECKPOINT_STEPS_MAX } from './checkpoint.js';
export type { Checkpoint, RecordedStep } from './checkpoint.js';
export { RunProgress, PROGRESS_TEXT_EVERY_MS } from './progress.js';
export type { InFlightCall, ProgressState } from './progress.js';
export { continuationNote } from './continuation.js';
export { settleStatus } from './outcome.js';
export type { CancelCause, RunErrorKind, RunStatus, SettleFacts, SettleStatus } from './outcome.js';
export { agentRpcHandlers } from './rpc.js';
export type { AgentTables, ApprovalsTable } from './tables.js';
export { defineLocalTool, LOCAL_TOOL_SERVER, type LocalTool } from './local-tools.js';
export { AgentRunnerKey, ApprovalStoreKey, SkillsKey, type SkillsHealth } from './services.js';
