/**
 * One agent run of a log row's execution (a task's `escalate`, an approved action), checkpointed
 * on the row as it goes (issue 17): each writing call before it runs (`beforeToolCall`), each tool
 * step once it returned, the gate's auto-approved and held writes, the ledger's figures, and the
 * final answer the moment it arrived (the agent layer's `RunProgress`). A run that continues a
 * cut-off one is told the steps already taken, fenced as data, and not to repeat them; a call the
 * person decided that already ran is not made again.
 */
import { continuationNote, head, RunProgress, type InFlightCall, type RecordedStep } from '../../agent/index.js';
import type { Clock, Logger } from '../../core/index.js';
import { NO_USAGE, type ExecAnswer, type ExecCheckpoint, type ExecUsage, type HeldCall } from './exec-checkpoint.js';
import type { AutoApproval, HeldWrite } from './log-detail.js';
import type { LogStore } from './log-store.js';
import type { AgentOutcome, AgentRunEvent, AgentStartRequest, TaskAgent } from './types.js';

/** What the approval gate of a run let through or held (kept in the checkpoint, carried over by a continued run). */
export interface GateRecords {
  auto: AutoApproval[];
  held: HeldWrite[];
  heldCalls: HeldCall[];
}

export interface AgentExecutionRequest {
  logId: string;
  /** The row's checkpoint with this run counted (`LogStore.beginRun`): earlier steps, figures and gate records. */
  checkpoint: ExecCheckpoint;
  /** This run continues a cut-off one: it is told the steps already taken. */
  continued: boolean;
  /** The gate's records, filled by `start.onApprovalRequested` (start them from `gateOf(checkpoint)`). */
  gate: GateRecords;
  start: Omit<AgentStartRequest, 'beforeToolCall'>;
  /** Told the run's id once it started (the row points at it; the page follows its steps). */
  onStarted?: ((runId: string) => Promise<void>) | undefined;
}

export interface AgentExecution {
  runId: string;
  outcome: AgentOutcome;
  /** Every run's tool steps, in order. */
  steps: RecordedStep[];
  /** The ledger's figures of every run's model calls. */
  usage: ExecUsage;
}

const INPUT_MAX = 300;

/** The gate records a checkpoint carries (a continued run adds to them). */
export function gateOf(checkpoint: ExecCheckpoint): GateRecords {
  return { auto: [...checkpoint.auto], held: [...checkpoint.held], heldCalls: [...checkpoint.held_calls] };
}

/** The outcome the cut-off run would have settled with: done, with its checkpointed answer. */
export function answeredOutcome(answer: ExecAnswer, checkpoint: ExecCheckpoint): AgentOutcome {
  return { status: 'done', text: answer.text, controls: answer.controls, steps: answer.steps, toolSteps: checkpoint.steps, finishedAt: answer.at };
}

export async function runAgentExecution(
  deps: { agent: TaskAgent; logs: Pick<LogStore, 'writeExecCheckpoint'>; clock: Clock; log: Logger },
  req: AgentExecutionRequest,
): Promise<AgentExecution> {
  const { checkpoint, gate } = req;
  const usage = countUsage();
  const progress = new RunProgress<ExecAnswer>({
    clock: deps.clock,
    log: deps.log.child({ log_id: req.logId }),
    what: 'an execution’s checkpoint',
    write: (state) =>
      deps.logs.writeExecCheckpoint(req.logId, {
        runs: checkpoint.runs,
        steps: [...checkpoint.steps, ...state.steps],
        in_flight: state.inFlight,
        answer: state.answer,
        usage: addUsage(checkpoint.usage, usage.current()),
        auto: gate.auto,
        held: gate.held,
        held_calls: gate.heldCalls,
      }),
  });
  const start: AgentStartRequest = {
    ...req.start,
    // A writing call is recorded before it runs: a kill during it leaves "may have happened", never a blind re-run.
    beforeToolCall: async (call) => {
      if (call.access !== 'write') return;
      const inFlight: InFlightCall = { ...call, input: head(safeJson(call.input), INPUT_MAX), at: deps.clock.now() };
      await progress.onCall(inFlight);
    },
  };
  if (req.continued) {
    start.system = `${start.system}\n\n${continuationNote({
      intro: '[Host note: this execution was cut off when its worker stopped; this run continues it.]',
      steps: checkpoint.steps,
      finish: 'Continue and finish the task; do not redo completed work.',
    })}`;
    // The person's decided call ran before the cut-off: it is among the steps, never made twice.
    if (start.decided && checkpoint.steps.some((s) => s.toolCallId.startsWith('decided-'))) delete start.decided;
  }
  const run = deps.agent.start(start);
  run.events?.subscribe((e) => {
    usage.add(e);
    if (e.type === 'tool-result' && typeof e.step === 'object') progress.onStep(e.step);
    else if (e.type === 'answered') {
      // Checkpointed before the run settles: a kill from here on is applied from it, not paid again.
      void progress.onAnswer({ run_id: run.id, text: e.text ?? '', controls: [...(e.controls ?? [])], steps: e.steps ?? 0, at: deps.clock.now() });
    }
  });
  await req.onStarted?.(run.id);
  const outcome = await run.settled;
  await progress.idle();
  return {
    runId: run.id,
    outcome,
    steps: [...checkpoint.steps, ...((outcome.toolSteps ?? []) as RecordedStep[])],
    usage: addUsage(checkpoint.usage, usage.current()),
  };
}

/** Tokens a run's model calls used, as they finish (the runner's `model-call` events: one per ledger row, each attempt included). */
export function countUsage(): { add(event: AgentRunEvent): void; current(): ExecUsage } {
  const total = { ...NO_USAGE };
  return {
    add(e) {
      if (e.type !== 'model-call') return;
      total.calls++;
      total.input += e.inputTokens ?? 0;
      total.output += e.outputTokens ?? 0;
      total.latency_ms += e.latencyMs ?? 0;
    },
    current: () => ({ ...total }),
  };
}

export function addUsage(a: ExecUsage, b: ExecUsage): ExecUsage {
  return { calls: a.calls + b.calls, input: a.input + b.input, output: a.output + b.output, latency_ms: a.latency_ms + b.latency_ms };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}
