/**
 * A full-effort run (seed 1's agentic executor, seed 2's Tier-2 resume): the `agent` model in
 * a multi-step AI SDK tool loop over the MCP tools, under the permission mode, the approval
 * gate, a step limit and a time cap, cancellable at any moment. Every model call goes through
 * `llm.languageModel(...)`, so each step is a row in the ledger.
 *
 * The run never throws: `settled` always resolves to a typed `RunOutcome` (seed 2 §7.5).
 */
import { dynamicTool, jsonSchema, stepCountIs, streamText, type ModelMessage, type ToolSet } from 'ai';
import { z } from 'zod';
import {
  SubconsciousError,
  describeError,
  isSubconsciousError,
  silentLogger,
  plural,
  untilAborted,
  type Clock,
  type Emitter,
  type IdGen,
  type Logger,
} from '../core/index.js';
import { classifyModelError, isModelError, UNTRUSTED_PREAMBLE, fence, type Llm, type ModelErrorKind, type ModelRole } from '../llm/index.js';
import { UNATTENDED_APPROVAL_MS, type Approval, type ApprovalContext, type ApprovalStore } from './approvals.js';
import { buildCheckpoint, head, type Checkpoint, type RecordedStep } from './checkpoint.js';
import { ControlLineFilter, parseControlLines, type ControlLine } from './control-lines.js';
import type { AgentEvents } from '../protocol/agent.js';
import { LOCAL_TOOL_SERVER, checkLocalTools, localToolJsonSchema, type LocalTool } from './local-tools.js';
import type { McpManager, McpToolInfo } from './mcp.js';
import { settleStatus, type CancelCause, type RunErrorKind, type RunStatus, type SettleFacts } from './outcome.js';
import { permissionModeSchema, toolPolicy, type PermissionMode, type ToolAccess } from './permissions.js';

/** The default run cap (seed 2 §7.1: "the existing 20-minute cap"). */
export const DEFAULT_RUN_CAP_MS = 20 * 60_000;
export const DEFAULT_MAX_STEPS = 25;
/** What a tool result may put back into the prompt (fenced, capped). */
const TOOL_RESULT_MAX_CHARS = 8000;
const STEP_TEXT_MAX = 300;

export interface RunOptions {
  /** The world (or host) the run works for: written to the ledger. */
  world: string;
  /** Why: written to the ledger (`task_execute`, `heartbeat_resume`, …). */
  purpose: string;
  system?: string | undefined;
  /** The history (exactly one of `messages` or `prompt`). */
  messages?: ModelMessage[] | undefined;
  prompt?: string | undefined;
  mode: PermissionMode;
  /** The model role (default `agent`) and, optionally, another model on that role's endpoint (a bot's own). */
  role?: ModelRole | undefined;
  model?: string | undefined;
  /** The MCP servers this run may use (a bot's tools); absent: every configured server; []: none. */
  servers?: readonly string[] | undefined;
  /** In-process tools offered beside the MCP tools, under the same modes and approval gate. */
  localTools?: readonly LocalTool[] | undefined;
  /** A person is there to answer approvals: they wait. Unattended approvals expire after 10 minutes. */
  attended: boolean;
  /** How long this run's unattended approvals wait (default: the runner's, 10 minutes). */
  approvalExpiryMs?: number | undefined;
  /**
   * Consulted right after an approval row is written, before the run waits for the answer.
   * Return a sentence when nobody can answer it (an unattended run, no page open, no client
   * attached): the approval expires at once, the tool does not run and the run settles
   * `failed`/`approval_expired` with that sentence, instead of waiting out the expiry.
   * Return undefined to wait as usual. A hook that throws is logged and the run waits.
   */
  onApprovalRequested?: ((approval: Approval) => string | undefined | Promise<string | undefined>) | undefined;
  runId?: string | undefined;
  /** Shown in the checkpoint when the run produced no text (the task's title). */
  title?: string | undefined;
  maxSteps?: number | undefined;
  capMs?: number | undefined;
  /** An outside abort (tick timeout, shutdown): cancels the run with cause `external`. */
  signal?: AbortSignal | undefined;
  /** Outside text the run is given in its prompt (a message, a situation report): shown on its approvals. */
  reads?: readonly ReadItem[] | undefined;
  /**
   * A call a person already decided (issue 23): before the model's first step the run makes
   * exactly this call (no approval: the person gave it) — or, with `response`, does not make it
   * and hands the person's text back as its result — and the model continues from there.
   */
  decided?: DecidedCall | undefined;
  /**
   * Awaited right before each tool call runs (after its approval, if any): a host records the call
   * with its unit of work first, so a worker killed during the call leaves a take-over knowing it
   * may have happened (RunProgress.onCall). A throw means it could not: the call does not run and
   * the run fails.
   */
  beforeToolCall?: BeforeToolCall | undefined;
}

export type BeforeToolCall = (call: { toolCallId: string; tool: string; server: string; access: ToolAccess; input: Record<string, unknown> }) => Promise<void>;

export type ReadItem = { what: string; excerpt: string };
export type DecidedCall = { server: string; tool: string; arguments: Record<string, unknown>; response?: string | undefined };

export interface RunOutcome {
  runId: string;
  status: RunStatus;
  errorKind?: RunErrorKind;
  error?: string;
  /** The final assistant text with control lines stripped. */
  text: string;
  controls: ControlLine[];
  checkpoint: Checkpoint;
  /** Model calls that finished (each is one ledger row). */
  steps: number;
  /**
   * The run stopped at its step limit while the model still wanted to call tools (it did not
   * answer): it settles `failed` with `unknown` (the issue's list of kinds is closed).
   */
  stepLimitReached: boolean;
  /** Tool steps, in order. */
  toolSteps: RecordedStep[];
  startedAt: number;
  finishedAt: number;
}

export type RunEvent =
  | { type: 'text-delta'; runId: string; text: string }
  | { type: 'tool-call'; runId: string; toolCallId: string; tool: string; server: string; access: ToolAccess; input: unknown }
  | { type: 'tool-result'; runId: string; toolCallId: string; tool: string; step: RecordedStep }
  | { type: 'approval-requested'; runId: string; toolCallId: string; approval: Approval }
  | { type: 'step-finished'; runId: string; step: number; finishReason: string; inputTokens: number | undefined; outputTokens: number | undefined }
  /** A model call of this run, as the ledger stored it (each attempt is one). */
  | { type: 'model-call'; runId: string; inputTokens: number; outputTokens: number; latencyMs: number; model: string; outcome: string }
  /**
   * The final answer arrived (the last step finished without a pending tool call, nothing failed
   * or stopped the run): sent before the run settles, so a host can checkpoint it and never pay
   * for it again if its process dies before the settle is written.
   */
  | { type: 'answered'; runId: string; text: string; controls: ControlLine[]; steps: number }
  | { type: 'settled'; runId: string; outcome: RunOutcome };

export type RunEventType = RunEvent['type'];

export interface RunEvents {
  /** Listen to this run's events; returns the unsubscribe function. */
  subscribe(listener: (event: RunEvent) => void): () => void;
}

export interface Run {
  readonly id: string;
  readonly world: string;
  readonly purpose: string;
  readonly startedAt: number;
  readonly events: RunEvents;
  /** `user`: stopped for good (cancelled); `preempted`: a person needs the bot (failed, resumable); `external`: cancelled. */
  cancel(cause: CancelCause): void;
  readonly settled: Promise<RunOutcome>;
}

export interface AgentRunnerOptions {
  llm: Llm;
  mcp: McpManager;
  approvals: ApprovalStore;
  clock: Clock;
  ids: IdGen;
  events?: Emitter<AgentEvents> | undefined;
  log?: Logger | undefined;
  /** Defaults for runs that do not say (the `[agent]` config section). */
  capMs?: number | undefined;
  maxSteps?: number | undefined;
  /** Unattended approval expiry (default 10 minutes). */
  approvalExpiryMs?: number | undefined;
}

const runOptionsSchema = z
  .object({
    world: z.string().min(1),
    purpose: z.string().min(1),
    system: z.string().optional(),
    messages: z.array(z.record(z.string(), z.unknown())).min(1).optional(),
    prompt: z.string().min(1).optional(),
    mode: permissionModeSchema,
    role: z.enum(['local', 'agent']).optional(),
    model: z.string().trim().min(1).optional(),
    servers: z.array(z.string().min(1)).optional(),
    localTools: z.array(z.custom<LocalTool>((t) => typeof t === 'object' && t !== null && typeof (t as LocalTool).execute === 'function')).optional(),
    attended: z.boolean(),
    approvalExpiryMs: z.number().int().positive().optional(),
    onApprovalRequested: z.custom<NonNullable<RunOptions['onApprovalRequested']>>((f) => typeof f === 'function').optional(),
    runId: z.string().min(1).optional(),
    title: z.string().optional(),
    maxSteps: z.number().int().min(1).max(500).optional(),
    capMs: z.number().int().positive().optional(),
    signal: z.instanceof(AbortSignal).optional(),
    reads: z.array(z.object({ what: z.string(), excerpt: z.string() })).optional(),
    decided: z
      .object({ server: z.string().min(1), tool: z.string().min(1), arguments: z.record(z.string(), z.unknown()), response: z.string().min(1).optional() })
      .optional(),
    beforeToolCall: z.custom<BeforeToolCall>((f) => typeof f === 'function').optional(),
  })
  .refine((o) => (o.messages === undefined) !== (o.prompt === undefined), { path: ['prompt'], message: 'give exactly one of `messages` or `prompt`' });

export class AgentRunner {
  private readonly active = new Map<string, RunState>();

  constructor(private readonly deps: AgentRunnerOptions) {}

  /** Start a run. Throws `invalid_params` (naming the field) for bad options, `conflict` for a duplicate run id. */
  start(options: RunOptions): Run {
    const checked = runOptionsSchema.safeParse(options);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      throw new SubconsciousError('invalid_params', `agent run: ${issue.path.join('.') || '(options)'}: ${issue.message}`);
    }
    try {
      checkLocalTools(options.localTools ?? []);
    } catch (err) {
      throw new SubconsciousError('invalid_params', `agent run: localTools: ${describeError(err)}`);
    }
    const id = options.runId ?? this.deps.ids();
    if (this.active.has(id)) throw new SubconsciousError('conflict', `A run with id "${id}" is already running.`);
    const state = new RunState(id, options, this.deps, () => this.active.delete(id));
    this.active.set(id, state);
    return state.handle;
  }

  /** The cap a run gets when it names none (`[agent] run_cap_minutes`). */
  get defaultCapMs(): number {
    return this.deps.capMs ?? DEFAULT_RUN_CAP_MS;
  }

  /** Runs in flight (their ids keep their approvals alive across `recover`). */
  activeRuns(): { id: string; world: string; purpose: string; startedAt: number }[] {
    return [...this.active.values()].map((s) => ({ id: s.id, world: s.options.world, purpose: s.options.purpose, startedAt: s.startedAt }));
  }

  get(runId: string): Run | undefined {
    return this.active.get(runId)?.handle;
  }

  /**
   * At start: pending approvals of runs that no longer exist can never be acted on; expire them.
   * Safe with several processes on one database: only rows owned by this process (and not of a
   * live run here) or by a dead process on this host are touched (see `expireOrphans`).
   */
  recover(): Promise<number> {
    return this.deps.approvals.expireOrphans(this.active.keys());
  }

  /** Cancel every run (shutdown) and wait for them to settle. */
  async cancelAll(cause: CancelCause = 'external'): Promise<void> {
    const runs = [...this.active.values()];
    for (const r of runs) r.cancel(cause);
    await Promise.all(runs.map((r) => r.handle.settled));
  }
}

/** One run's mutable state; the public face is `handle`. */
class RunState {
  readonly handle: Run;
  readonly startedAt: number;
  private readonly controller = new AbortController();
  private readonly capTimer = new AbortController();
  private readonly listeners = new Set<(e: RunEvent) => void>();
  private readonly facts: SettleFacts = { userStopped: false, preempted: false, aborted: false };
  private readonly toolSteps: RecordedStep[] = [];
  private readonly log: Logger;
  private steps = 0;
  /** The ledger's figures for this run's model calls so far (an approval shows them). */
  private readonly spent = { calls: 0, input: 0, output: 0, lastInput: 0, lastOutput: 0 };
  private lastFinishReason: string | undefined;
  private maxSteps = DEFAULT_MAX_STEPS;

  constructor(
    readonly id: string,
    readonly options: RunOptions,
    private readonly deps: AgentRunnerOptions,
    private readonly onDone: () => void,
  ) {
    this.startedAt = deps.clock.now();
    this.log = (deps.log ?? silentLogger).child({ run: id, world: options.world });
    const listeners = this.listeners;
    // Start on a later turn so a caller can subscribe to events right after `start`.
    const settled = Promise.resolve().then(() => this.execute());
    this.handle = {
      id,
      world: options.world,
      purpose: options.purpose,
      startedAt: this.startedAt,
      events: {
        subscribe(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
      },
      cancel: (cause) => this.cancel(cause),
      settled,
    };
  }

  cancel(cause: CancelCause): void {
    if (this.controller.signal.aborted && cause !== 'user') return;
    if (cause === 'user') this.facts.userStopped = true;
    else if (cause === 'preempted') this.facts.preempted = true;
    this.abort();
  }

  private abort(): void {
    this.facts.aborted = true;
    if (!this.controller.signal.aborted) this.controller.abort(new SubconsciousError('cancelled', 'The run was cancelled.'));
  }

  /** Record the first failure and stop the run. */
  private fail(kind: NonNullable<SettleFacts['failure']>['kind'], message: string): void {
    this.facts.failure ??= { kind, message };
    this.abort();
  }

  private async execute(): Promise<RunOutcome> {
    const { options, deps } = this;
    const capMs = options.capMs ?? deps.capMs ?? DEFAULT_RUN_CAP_MS;
    const maxSteps = (this.maxSteps = options.maxSteps ?? deps.maxSteps ?? DEFAULT_MAX_STEPS);
    const onOutsideAbort = () => this.cancel('external');
    options.signal?.addEventListener('abort', onOutsideAbort, { once: true });
    if (options.signal?.aborted) this.cancel('external');
    deps.clock.sleep(capMs, this.capTimer.signal).then(
      () => this.fail('timeout', `The run hit its time cap (${formatDuration(capMs)}) and was stopped.`),
      () => undefined,
    );

    let lastText = '';
    try {
      if (this.controller.signal.aborted) throw this.controller.signal.reason;
      // Starting a tool server may take a while: a cancel or the cap must not wait for it.
      const allowed = options.servers ? new Set(options.servers) : null;
      const mcpTools = allowed?.size === 0 ? [] : await untilAborted(deps.mcp.listTools(), this.controller.signal);
      const tools = this.buildTools(
        mcpTools.filter((t) => !allowed || allowed.has(t.server)),
        options.localTools ?? [],
      );
      const hasTools = Object.keys(tools).length > 0;
      const system = [options.system, hasTools ? UNTRUSTED_PREAMBLE : undefined].filter(Boolean).join('\n\n') || undefined;
      const model = deps.llm.languageModel({
        world: options.world,
        purpose: options.purpose,
        role: options.role ?? 'agent',
        model: options.model,
        onLedger: (row) => {
          this.spent.calls++;
          this.spent.input += row.inputTokens;
          this.spent.output += row.outputTokens;
          this.spent.lastInput = row.inputTokens;
          this.spent.lastOutput = row.outputTokens;
          this.emit({
            type: 'model-call',
            runId: this.id,
            inputTokens: row.inputTokens,
            outputTokens: row.outputTokens,
            latencyMs: row.latencyMs,
            model: row.model,
            outcome: row.outcome,
          });
        },
      });
      let prompt: { messages: ModelMessage[] } | { prompt: string } = options.messages ? { messages: options.messages } : { prompt: options.prompt! };
      if (options.decided) {
        const history: ModelMessage[] = options.messages ?? [{ role: 'user', content: options.prompt! }];
        prompt = { messages: [...history, ...(await this.runDecided(options.decided, mcpTools))] };
      }
      const result = streamText({
        model,
        ...(system ? { system } : {}),
        ...prompt,
        ...(hasTools ? { tools } : {}),
        stopWhen: stepCountIs(maxSteps),
        abortSignal: this.controller.signal,
        // Retries (429 backoff) belong to the model layer, where they are counted.
        maxRetries: 0,
        // Errors arrive as `error` parts below; the SDK's default handler would print them.
        onError: () => undefined,
      });
      const filter = new ControlLineFilter();
      let stepText = '';
      for await (const part of result.fullStream) {
        switch (part.type) {
          case 'start-step':
            stepText = '';
            break;
          case 'text-delta': {
            stepText += part.text;
            const visible = filter.push(part.text);
            if (visible) this.emit({ type: 'text-delta', runId: this.id, text: visible });
            break;
          }
          case 'text-end': {
            const rest = filter.end();
            if (rest) this.emit({ type: 'text-delta', runId: this.id, text: rest });
            break;
          }
          case 'tool-error':
            // Invalid input or an unknown tool: execute never ran, so no step was recorded yet.
            if (!this.toolSteps.some((s) => s.toolCallId === part.toolCallId)) {
              this.recordStep(part.toolCallId, part.toolName, part.input, 'error', describeError(part.error));
            }
            break;
          case 'finish-step':
            this.steps++;
            this.lastFinishReason = part.finishReason;
            if (stepText.trim()) lastText = stepText;
            stepText = '';
            this.emit({
              type: 'step-finished',
              runId: this.id,
              step: this.steps,
              finishReason: part.finishReason,
              inputTokens: part.usage.inputTokens,
              outputTokens: part.usage.outputTokens,
            });
            break;
          case 'error':
            this.onModelError(part.error);
            break;
          default:
            break;
        }
      }
      if (stepText.trim()) lastText = stepText;
    } catch (err) {
      this.onModelError(err);
    } finally {
      options.signal?.removeEventListener('abort', onOutsideAbort);
      this.capTimer.abort();
    }
    return this.settle(lastText);
  }

  private onModelError(err: unknown): void {
    if (this.controller.signal.aborted) return; // the cause is already recorded
    if (isSubconsciousError(err) && !isModelError(err)) {
      this.fail('unknown', err.explain());
      return;
    }
    const role = this.options.role ?? 'agent';
    const endpoint = this.deps.llm.endpoint(role);
    const modelError = classifyModelError(err, { role, baseUrl: endpoint.baseUrl, model: this.options.model ?? endpoint.model });
    if (modelError.kind === 'cancelled') {
      this.abort();
      return;
    }
    this.fail(runErrorKind(modelError.kind), modelError.explain());
  }

  private async settle(lastText: string): Promise<RunOutcome> {
    const { text: visible, controls } = (() => {
      const p = parseControlLines(lastText);
      return { text: p.visible, controls: p.controls };
    })();
    // Checked only when nothing else ended the run: a cancel or failure at the last step keeps its own cause.
    const stepLimitReached = settleStatus(this.facts).status === 'done' && this.steps >= this.maxSteps && this.lastFinishReason === 'tool-calls';
    if (stepLimitReached) {
      this.facts.failure = {
        kind: 'unknown',
        message: `The run stopped after ${plural(this.steps, 'step')} without finishing; raise [agent] max_steps or simplify the task.`,
      };
    }
    const status = settleStatus(this.facts);
    if (status.status === 'done') this.emit({ type: 'answered', runId: this.id, text: visible, controls, steps: this.steps });
    try {
      await this.deps.approvals.expireRun(this.id);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'could not expire the run’s pending approvals');
    }
    const finishedAt = this.deps.clock.now();
    const outcome: RunOutcome = {
      runId: this.id,
      status: status.status,
      ...(status.errorKind ? { errorKind: status.errorKind } : {}),
      ...(status.error ? { error: status.error } : {}),
      text: visible,
      controls,
      checkpoint: buildCheckpoint({
        text: visible,
        steps: this.toolSteps,
        title: this.options.title,
        error: status.error,
        at: finishedAt,
      }),
      steps: this.steps,
      stepLimitReached,
      toolSteps: [...this.toolSteps],
      startedAt: this.startedAt,
      finishedAt,
    };
    this.log.info({ status: outcome.status, errorKind: outcome.errorKind, steps: outcome.steps, stepLimitReached }, 'agent run settled');
    this.onDone();
    this.emit({ type: 'settled', runId: this.id, outcome });
    return outcome;
  }

  private buildTools(infos: McpToolInfo[], locals: readonly LocalTool[]): ToolSet {
    const tools: ToolSet = {};
    for (const info of infos) {
      const policy = toolPolicy(this.options.mode, info);
      if (policy === 'hidden') continue;
      const call: ToolCall = (args, signal) => this.deps.mcp.callTool(info.server, info.name, args, signal);
      tools[info.exposedName] = dynamicTool({
        description: info.description,
        inputSchema: jsonSchema(info.inputSchema as Parameters<typeof jsonSchema>[0]),
        execute: (input, { toolCallId, abortSignal }) => this.runTool(info, call, policy === 'needs_approval', toolCallId, input, abortSignal),
      });
    }
    for (const local of locals) {
      const policy = toolPolicy(this.options.mode, { access: local.access, allowAutomatically: false });
      if (policy === 'hidden') continue;
      const info: ToolIdentity = {
        server: LOCAL_TOOL_SERVER,
        name: local.name,
        exposedName: local.name,
        access: local.access,
        inputSchema: localToolJsonSchema(local) as Record<string, unknown>,
      };
      const call: ToolCall = async (args, signal) => {
        const parsed = local.input.safeParse(args);
        if (!parsed.success)
          return {
            text: `Invalid input for ${local.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ')}`,
            isError: true,
          };
        try {
          return { text: await local.execute(parsed.data, { signal }), isError: false };
        } catch (err) {
          if (signal.aborted) throw err;
          return { text: describeError(err), isError: true };
        }
      };
      tools[local.name] = dynamicTool({
        description: local.description,
        inputSchema: jsonSchema(localToolJsonSchema(local) as Parameters<typeof jsonSchema>[0]),
        execute: (input, { toolCallId, abortSignal }) => this.runTool(info, call, policy === 'needs_approval', toolCallId, input, abortSignal),
      });
    }
    return tools;
  }

  private async runTool(
    info: ToolIdentity,
    call: ToolCall,
    needsApproval: boolean,
    toolCallId: string,
    input: unknown,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    let args = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
    const runSignal = signal ?? this.controller.signal;
    if (needsApproval) {
      const answer = await this.askApproval(info, toolCallId, args, runSignal);
      if (answer.kind === 'ignore') {
        this.recordStep(toolCallId, info.exposedName, args, 'denied', 'denied by the user');
        return `The user denied this call to ${info.exposedName}; it did not run. Do not retry it: continue without it, or ask the user.`;
      }
      if (answer.kind === 'respond') return this.respondInstead(toolCallId, info, args, answer.text);
      args = answer.arguments;
    }
    if (this.options.beforeToolCall) {
      try {
        await this.options.beforeToolCall({ toolCallId, tool: info.exposedName, server: info.server, access: info.access, input: args });
      } catch (err) {
        const why = `${info.exposedName} was not run: it could not be recorded first (${describeError(err)})`;
        this.recordStep(toolCallId, info.exposedName, args, 'error', why);
        this.fail('unknown', `${why}.`);
        throw err;
      }
    }
    this.emit({ type: 'tool-call', runId: this.id, toolCallId, tool: info.exposedName, server: info.server, access: info.access, input: args });
    try {
      const res = await call(args, runSignal);
      this.recordStep(toolCallId, info.exposedName, args, res.isError ? 'error' : 'ok', res.text);
      const fenced = fence(res.text, { label: `tool_result ${info.exposedName}`, maxChars: TOOL_RESULT_MAX_CHARS });
      return res.isError ? `The tool reported an error:\n${fenced}` : fenced;
    } catch (err) {
      if (runSignal.aborted || isSubconsciousError(err, 'cancelled')) {
        this.recordStep(toolCallId, info.exposedName, args, 'cancelled', 'cancelled');
        throw err;
      }
      if (this.deps.mcp.isClosed) {
        // Shutdown closed the tool servers under the run: it was stopped, nothing is broken.
        this.recordStep(toolCallId, info.exposedName, args, 'cancelled', 'the tool servers were shut down');
        this.cancel('external');
        throw err;
      }
      // The tool server died or could not start: the run cannot trust its state, so it fails.
      this.recordStep(toolCallId, info.exposedName, args, 'error', describeError(err));
      this.fail('unknown', describeError(err));
      throw err;
    }
  }

  /** The approval gate: a durable row, then wait for the answer (or the expiry, when unattended). */
  private async askApproval(info: ToolIdentity, toolCallId: string, args: Record<string, unknown>, signal: AbortSignal): Promise<GateAnswer> {
    const { deps, options } = this;
    const expiryMs = options.approvalExpiryMs ?? deps.approvalExpiryMs ?? UNATTENDED_APPROVAL_MS;
    const expiresAt = options.attended ? null : deps.clock.now() + expiryMs;
    const approval = await deps.approvals.create({
      runId: this.id,
      world: options.world,
      tool: info.name,
      server: info.server,
      arguments: args,
      reason: approvalReason(options, info),
      expiresAt,
      inputSchema: info.inputSchema ?? null,
      context: this.approvalContext(),
    });
    this.emit({ type: 'approval-requested', runId: this.id, toolCallId, approval });
    const refusal = await this.unanswerable(approval);
    // Expire first: an answer that landed in the same moment wins, and is read below.
    if (refusal && (await deps.approvals.expire(approval.id).catch(() => false))) {
      this.recordStep(toolCallId, info.exposedName, args, 'expired', 'nobody could answer the approval; the tool did not run');
      this.fail('approval_expired', refusal);
      throw new SubconsciousError('cancelled', 'Nobody can answer the approval.');
    }
    let answer: 'approved' | 'denied' | 'expired';
    try {
      answer = await deps.approvals.waitForAnswer(approval.id, signal);
    } catch (err) {
      // The run stopped: nobody can act on the row any more. Expire it now rather than at settle,
      // and if an answer landed in that same moment, say plainly that the tool still did not run.
      const expired = await deps.approvals.expire(approval.id).catch(() => false);
      const note = expired ? 'cancelled while waiting for approval' : 'cancelled while waiting for approval; the answer came too late and the tool did not run';
      this.recordStep(toolCallId, info.exposedName, args, 'cancelled', note);
      throw err;
    }
    if (answer === 'expired') {
      this.recordStep(toolCallId, info.exposedName, args, 'expired', 'approval expired; the tool did not run');
      const wait = formatDuration(expiryMs);
      this.fail('approval_expired', `Nobody answered the approval for ${info.name} on ${info.server} within ${wait}; the tool did not run.`);
      throw new SubconsciousError('cancelled', 'The approval expired.');
    }
    // The row says how: an edit runs with its (checked) arguments, a response goes back to the model.
    const row = await deps.approvals.get(approval.id);
    const how = row?.answer;
    if (answer === 'approved') {
      const edited = how?.kind === 'edit' && how.arguments && typeof how.arguments === 'object' ? (how.arguments as Record<string, unknown>) : null;
      return { kind: 'run', arguments: edited ?? args };
    }
    if (how?.kind === 'respond' && how.text) return { kind: 'respond', text: how.text };
    return { kind: 'ignore' };
  }

  /** What an approval shows beside the call: the model, tokens spent and estimated, outside text read. */
  private approvalContext(): ApprovalContext {
    const role = this.options.role ?? 'agent';
    let model: string | null = this.options.model ?? null;
    if (!model) {
      try {
        model = this.deps.llm.endpoint(role).model;
      } catch {
        model = null;
      }
    }
    const read = [
      ...(this.options.reads ?? []).map((r) => ({ what: head(r.what, 120), excerpt: excerpt(r.excerpt) })),
      ...this.toolSteps.filter((s) => s.outcome === 'ok').map((s) => ({ what: `${s.tool} ${head(s.input, 80)}`, excerpt: excerpt(s.output) })),
    ].slice(-8);
    return {
      model,
      spent: { calls: this.spent.calls, input_tokens: this.spent.input, output_tokens: this.spent.output },
      // After the call the model reads the whole history again and answers: the prompt so far
      // (about 4 characters a token, or the last step's measured input if larger) plus the results.
      estimate: { input_tokens: Math.max(this.spent.lastInput, this.promptTokens()) + 200, output_tokens: Math.max(this.spent.lastOutput, 50) },
      read,
    };
  }

  /** A rough size of what the model is sent (system, prompt or history, tool results so far), in tokens. */
  private promptTokens(): number {
    const o = this.options;
    const chars =
      (o.system?.length ?? 0) +
      (o.prompt?.length ?? 0) +
      (o.messages ? safeJson(o.messages).length : 0) +
      this.toolSteps.reduce((n, s) => n + s.output.length, 0);
    return Math.ceil(chars / 4);
  }

  /** The person answered with text instead of the call: the tool did not run and the model reads their words. */
  private respondInstead(toolCallId: string, info: ToolIdentity, args: Record<string, unknown>, text: string): string {
    this.recordStep(toolCallId, info.exposedName, args, 'denied', `not run; the user replied: ${text}`);
    return `The user did not run this call to ${info.exposedName}. They replied (from the user, not from a tool):\n${text}\nContinue with that.`;
  }

  /** A call the person decided before the run started: made (or answered) once, as history for the model. */
  private async runDecided(decided: DecidedCall, mcpTools: McpToolInfo[]): Promise<ModelMessage[]> {
    const local = (this.options.localTools ?? []).find((t) => decided.server === LOCAL_TOOL_SERVER && t.name === decided.tool);
    const info = mcpTools.find((t) => t.server === decided.server && t.name === decided.tool);
    if (!info && !local) {
      throw new SubconsciousError('not_found', `The tool ${decided.tool} on ${decided.server} is not offered any more, so the decided call did not run.`, {
        hint: 'Check the server in the Skills tab (mcp.servers).',
      });
    }
    const exposed = info ? info.exposedName : decided.tool;
    const toolCallId = `decided-${this.id}`;
    let output: string;
    if (decided.response !== undefined) {
      output = this.respondInstead(
        toolCallId,
        { server: decided.server, name: decided.tool, exposedName: exposed, access: 'write' },
        decided.arguments,
        decided.response,
      );
    } else if (info) {
      output = await this.runTool(
        info,
        (args, signal) => this.deps.mcp.callTool(info.server, info.name, args, signal),
        false,
        toolCallId,
        decided.arguments,
        this.controller.signal,
      );
    } else {
      throw new SubconsciousError('invalid_params', 'A decided call must name an MCP tool.');
    }
    return [
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName: exposed, input: decided.arguments }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: exposed, output: { type: 'text', value: output } }] },
    ];
  }

  /** The run's `onApprovalRequested` verdict: a reason nobody can answer, or undefined to wait. */
  private async unanswerable(approval: Approval): Promise<string | undefined> {
    const hook = this.options.onApprovalRequested;
    if (!hook) return undefined;
    try {
      const reason = await hook(approval);
      return reason?.trim() ? reason.trim() : undefined;
    } catch (err) {
      this.log.warn({ err: describeError(err), approval: approval.id }, 'onApprovalRequested threw; waiting for the answer as usual');
      return undefined;
    }
  }

  private recordStep(toolCallId: string, tool: string, input: unknown, outcome: RecordedStep['outcome'], output: string): void {
    const step: RecordedStep = {
      toolCallId,
      tool,
      input: head(safeJson(input), STEP_TEXT_MAX),
      outcome,
      output: head(output.replace(/\s+/g, ' ').trim(), STEP_TEXT_MAX),
      at: this.deps.clock.now(),
    };
    this.toolSteps.push(step);
    this.emit({ type: 'tool-result', runId: this.id, toolCallId, tool, step });
  }

  private emit(event: RunEvent): void {
    for (const l of [...this.listeners]) {
      try {
        l(event);
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'a run event listener threw');
      }
    }
    const { runId, type, ...rest } = event;
    this.deps.events?.emit('agent.run', { run_id: runId, world: this.options.world, purpose: this.options.purpose, event: type, ...rest });
  }
}

/** What the runner needs to know of a tool, MCP or local. */
type ToolIdentity = Pick<McpToolInfo, 'server' | 'name' | 'exposedName' | 'access'> & { inputSchema?: Record<string, unknown> };
type GateAnswer = { kind: 'run'; arguments: Record<string, unknown> } | { kind: 'respond'; text: string } | { kind: 'ignore' };
type ToolCall = (args: Record<string, unknown>, signal: AbortSignal) => Promise<{ text: string; isError: boolean }>;

function runErrorKind(kind: ModelErrorKind): NonNullable<SettleFacts['failure']>['kind'] {
  switch (kind) {
    case 'rate_limit':
      return 'rate_limit';
    case 'timeout':
      return 'timeout';
    case 'cancelled':
      return 'unknown';
    default:
      return 'provider'; // rate_cap, no_tools, unreachable, malformed, provider: the message says which
  }
}

function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return plural(ms / 60_000, 'minute');
  if (ms % 1000 === 0) return plural(ms / 1000, 'second');
  return `${ms} ms`;
}

/** A short plain excerpt of outside text for a person: fence tags and runs of whitespace dropped. */
function excerpt(text: string): string {
  return head(
    text
      .replace(/<\/?untrusted-data[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
    240,
  );
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

/**
 * Why a person is asked, in their words. A writing tool waits for approval only in a `tainted`
 * run: one that read outside text (messages, files, tool results) which could steer it, so
 * whatever the run was allowed to do, each change it wants is shown first.
 */
export function approvalReason(options: Pick<RunOptions, 'title' | 'world'>, tool: { name: string; server: string }): string {
  const who = options.title?.trim() ? `“${head(options.title.trim(), 120)}”` : `A ${options.world} run`;
  return `${who} wants to use ${tool.name} on ${tool.server}, a tool that can change things. The run read outside text (messages, files or tool results) that could steer it, so the tool runs only if you approve.`;
}
