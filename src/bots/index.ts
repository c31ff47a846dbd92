/**
 * The bots host (issue 11): bots, direct and group threads, messages, tasks, runs, approvals and
 * routines — the host seed 2's heartbeat lives in. A host module without a tick of its own.
 *
 * As a module: `botsModule` (module.ts) — `[worlds.bots]`, its tables, `botsContract`, the
 * `bots` CLI, the Bots tab; needs AgentRunnerKey, ApprovalStoreKey, PresenceKey; uses the memory
 * store (`MemoryStoreKey`) and SkillsKey; provides BotsHeartbeatKey.
 *
 * Wiring by hand (what the module does):
 *   await applyMigrations(store.db, store.dialect, botsMigrations);
 *   const host = createBotsHost({
 *     db: tablesView<BotsTables>(store.db), clock, ids, log,
 *     runner,                       // AgentRunner (bot runs: mode tainted, the bot's tools/model)
 *     approvals,                    // the agent layer's ApprovalStore
 *     emit,                         // (type, data) => bus.emit(type, data): BotsEvents
 *     config: parseBotsConfig(raw.worlds?.bots),
 *     mcpServers: () => mcp.health().map((s) => s.name),
 *     memoryNotes: () => services.find(MemoryStoreKey),   // MEMORY:/TEAM_MEMORY: → memory documents
 *   });
 *   await host.start();             // restart repair FIRST, then the routine timer
 *   implement(botsContract, host.rpc).forEach((m) => dispatcher.add(m));
 *   registerBotsCommands(command, call, { subscribe, print });   // CLI: `subconscious bots …`
 *   await host.stop();              // at shutdown: running work settles failed + interrupted
 *
 * For the heartbeat (seed 2, issue 12) — `host.heartbeat: BotsHeartbeatApi`, nothing else:
 *   isIdle(botId)                  single-flight (§5.1): no run, external run, queued job, job
 *                                  between enqueue and start, dispatch being written, or pulse
 *   beginPulse(botId, controller)  registers a pulse atomically with the idle check (null: busy);
 *                                  call the returned release in `finally`; a person's message
 *                                  or stop aborts the controller
 *   openWork({botIds?, kinds?})    triage candidates by an indexed query (status, error_kind)
 *   claimTask(id, {version, token, by, staleMs?})   compare-and-set claim, attempts + 1 and
 *                                  last_heartbeat_at in the same write (§5.5); undefined: lost
 *   renewClaim / releaseClaim(id, {token?, refund?}) / staleClaims / resetAttempts (§7.5)
 *   dispatchToBot(botId, threadId, preamble, { heartbeat: true, taskId, claimToken, priority: 'low' })
 *                                  reuses the claimed task; begin() re-checks the claim and the
 *                                  task's status; a person's message drops the waiting job
 *                                  (claim released, attempt refunded: onJobDropped tells you) or
 *                                  preempts the running one (failed + interrupted + preempted)
 *   onSettled(l)                   every settle (task, outcome) — cooldowns, the log
 *   onControlLines(l)              FOLLOWUP:/BLOCKED: (and MEMORY:/TEAM_MEMORY: for the memory store)
 *   onJobDropped(l)                a job removed before its run (user message, stop, refused)
 *   addPersonaSection(fn)          the FOLLOWUP:/BLOCKED: lines in every persona
 *   registerAttention(fn)          pending check-ins counted in needs-attention
 *   onHumanAction(l)               a person sent / read / answered / cancelled / dismissed / stopped
 *                                  (resolve check-ins, clear "when user replies" follow-ups, reset attempts)
 *   expiredApprovals(botId, since) rule 5; postSystemNote / postBotMessage (check-ins);
 *   directThread, messages, userActivity, markUserActive, getTask, statusOf, isChecking
 *   bots(ids), countBots()         the digest's names; the Usage tab's interval comparison
 *   orphans({olderThanMs})         rule 2: queued/working tasks with no live run (owner here, or its lease ran out)
 *   triageWork?({botIds, ...})     openWork and, of its rows, the orphans: one read (optional; triageWorkOf
 *                                  asks openWork and orphans of a host without it)
 *   triageMessages([{threadId, botId}], n)   of each thread's newest n, what the rules can look at
 *   staleMessages / reconcileMessage   rule 7: a bot message left streaming with no run
 *   repairOrphan(taskId)           rule 2: an orphan marked failed + interrupted before its claim
 *   thread(id)                     a thread by id
 *   recentMessages / userActivities / expiredApprovalsOf   the same reads for many bots, one query each
 *   fireDueRoutines()              §9.1: the routines due now dispatched first in each heartbeat tick
 *   SettledInfo.usage              a run's model calls and tokens (the heartbeat's cost figures)
 *
 * The built-in host is one implementation of that API; an external agent runtime's bots are
 * another (`ExternalHeartbeatKey`, src/runtimes/): the heartbeat module routes between them by id
 * (`routeHeartbeatHosts`, route.ts) and treats both the same.
 */
export {
  createBotsHost,
  HEARTBEAT_EXHAUSTED,
  ORPHAN_AFTER_MS,
  STALE_MESSAGE_MS,
  triageWorkOf,
  type BotsHost,
  type BotsHostDeps,
  type BotsHeartbeatApi,
  type TriageWork,
  type TriageWorkOptions,
} from './host.js';
export { BotRuntime } from './runtime.js';
export { MAX_CUT_OFF_RUNS } from './cut-offs.js';
export { BOTS_WORLD } from './run-options.js';
export type { ControlLinesInfo, DispatchOptions, Dispatched, DroppedJobInfo, RunUsage, RuntimeStatus, SettledInfo } from './runtime.js';
export { BotsService, mentions, type AttentionSource, type HumanAction } from './service.js';
export { botsRpcHandlers } from './rpc.js';
export {
  registerBotsCommands,
  resolveBot,
  watchReply,
  formatBotTable,
  type BotsCall,
  type BotsCliOptions,
  type EventSubscribe,
  type BotsWireEvent,
} from './cli.js';
export { botsConfigSchema, parseBotsConfig, defaultBotsConfig, type BotsConfig } from './config.js';
export { botsMigrations } from './migrations.js';
export type { BotsTables } from './tables.js';
export type { BotsEmit, BotsEvents } from './events.js';
export { repairAfterRestart, INTERRUPTED_ERROR, type RepairResult } from './repair.js';
export { cutByShutdown, SHUTDOWN_INTERRUPTED } from './settle.js';
export { STALE_CLAIM_MS, FINAL_STATUSES } from './task-store.js';
export { personaText, historyMessages, type PersonaSection } from './prompt.js';
export type { JobPriority } from './queue.js';
export type { RoutineFiring } from './routines.js';
export { BotsHeartbeatKey, BotsDelegationKey, ExternalHeartbeatKey, type BotsDelegationApi } from './services.js';
export { routeHeartbeatHosts, type ExternalHeartbeatHost } from './route.js';
export { botsModule } from './module.js';
export { memoryNotesListener, botNamespace, TEAM_NAMESPACE, type MemoryNoteSink } from './memory-notes.js';
