/**
 * The heartbeat for your own agent runtime (issue 18 §6): the `runtime.*` methods an external
 * host calls over the wire — register its bots, report what they do, receive dispatches (by
 * webhook or by long-poll) and acknowledge them — the rows it sees, and the events.
 *
 * Ids: everything an external host sends and receives is named by **its own** ids (`bot_id`,
 * `thread_id`, `task_id`, …: 1–128 characters, letters, digits and `. _ : @ / + -`), unique
 * within its `runtime_id`. The daemon's own ids for the same things (what `bots.set_heartbeat`,
 * `bots.heartbeat_log` and the other heartbeat methods take) are `ext:<runtime_id>:<your id>`,
 * given back as `subconscious_*`.
 *
 * A webhook is a `POST` of a `RuntimeWebhook` body with the headers below; its signature is
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the runtime's secret>` (verify
 * it with `verifyWebhookSignature` from `subconscious-engine/client`).
 *
 * Browser-safe: zod only.
 */
import { z } from 'zod';
import { defineContract, method } from './contract.js';
import { MESSAGE_ROLES, MESSAGE_STATUSES, TASK_ERROR_KINDS, TASK_STATUSES } from './bots.js';

/** A runtime's id: lower-case letters, digits, `-` and `_`, starting with a letter or digit (at most 64). */
export const RUNTIME_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** An id the external host gives its own things (a bot, a thread, a task, a message, a run, an approval). */
export const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$/;
/** The prefix of the daemon's ids for an external runtime's things: `ext:<runtime_id>:<external id>`. */
export const EXTERNAL_ID_PREFIX = 'ext:';

/** The webhook's headers (lower case, as Node and fetch give them). */
export const WEBHOOK_SIGNATURE_HEADER = 'x-subconscious-signature';
/** The dispatch's id: the same on every delivery of one dispatch (dedupe on it). */
export const WEBHOOK_IDEMPOTENCY_HEADER = 'idempotency-key';
/** Which delivery of the dispatch this is (1, 2, …). */
export const WEBHOOK_ATTEMPT_HEADER = 'x-subconscious-delivery-attempt';
/** `dispatch.resume`, `dispatch.ask`, `dispatch.cancel`. */
export const WEBHOOK_EVENT_HEADER = 'x-subconscious-event';
/** How old a signature's timestamp may be before a receiver should refuse it (a replay). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * What the daemon asks of an external runtime:
 *   resume  continue this task (it is claimed for you: `runtime.ack` first, run it once, report it done/failed)
 *   ask     show your person this question (a heartbeat check-in)
 *   cancel  stop the heartbeat resume of this task: the person wrote first (it may come back later)
 */
export const DISPATCH_KINDS = ['resume', 'ask', 'cancel'] as const;
export type DispatchKind = (typeof DISPATCH_KINDS)[number];

/**
 *   pending    committed, not delivered yet (or delivered and not acknowledged in time: delivered again)
 *   delivered  the webhook answered 2xx, or a poll handed it out; waiting for `runtime.ack`
 *   acked      acknowledged (a resume: the task is yours, under its lease)
 *   done       a resume reported done (or review); an ask or a cancel acknowledged
 *   failed     a resume reported failed or cancelled
 *   expired    not acknowledged, or not reported, within its time (a resume's task goes back to the heartbeat)
 *   cancelled  no longer wanted before it was acknowledged (the person wrote first, the task finished)
 *   preempted  a resume set aside after its start: the person wrote first
 */
export const DISPATCH_STATES = ['pending', 'delivered', 'acked', 'done', 'failed', 'expired', 'cancelled', 'preempted'] as const;
export type DispatchState = (typeof DISPATCH_STATES)[number];

export const EXTERNAL_RUN_STATUSES = ['running', 'done', 'failed', 'cancelled'] as const;
export type ExternalRunStatus = (typeof EXTERNAL_RUN_STATUSES)[number];

export const EXTERNAL_APPROVAL_STATES = ['pending', 'approved', 'denied', 'expired'] as const;

/** How a runtime receives its dispatches (a secret is named, never sent: the daemon reads it). */
export type RuntimeDelivery =
  | {
      kind: 'webhook';
      url: string;
      /** The environment variable of the daemon holding the secret, or… */
      secret_env: string | null;
      /** …the file holding it (read at each delivery: rotate it in place). */
      secret_file: string | null;
    }
  | { kind: 'poll' };

export interface ExternalRuntime {
  id: string;
  name: string;
  delivery: RuntimeDelivery;
  /** The process that registered last (a new one means the runtime restarted). */
  instance_id: string | null;
  bots: number;
  /** Dispatches not yet acknowledged. */
  pending_dispatches: number;
  /** The last failed webhook delivery, while one is failing (null once one succeeds). */
  last_delivery_error: string | null;
  created_at: number;
  updated_at: number;
  /** The last call from it (register, report, poll, ack). */
  seen_at: number;
  /**
   * Whether the daemon can reach it now: a webhook runtime while its deliveries succeed (no
   * `last_delivery_error`); a poll runtime while it keeps calling (seen within twice `ack_seconds`).
   */
  reachable: boolean;
  /** Why it is not reachable, in plain words (null when it is). */
  unreachable_reason: string | null;
}

/** An external bot as the Bots tab shows it: the bot, its runtime, and what the runtime's reports say of it. */
export interface ExternalBotStatus extends ExternalBot {
  /** Its runtime's name. */
  runtime_name: string;
  /** From the runtime's reports: `working` (a run reported running, or a resume it acknowledged), `queued` (a resume sent, not started), `idle`. */
  status: 'idle' | 'queued' | 'working';
  /** Work waiting beside what runs. */
  queued: number;
  /** Your id of the task it works on (working only). */
  task_id: string | null;
  /** That task's title. */
  task_title: string | null;
  /** The last report of this bot's tasks, runs or messages (null: none yet). */
  reported_at: number | null;
  /** Its runtime's reachability (the same as `runtime.list`'s). */
  reachable: boolean;
  unreachable_reason: string | null;
}

export interface ExternalBot {
  /** Your id. */
  id: string;
  /** A bot of an external runtime (the built-in host's bots are `bots.list`'s). */
  kind: 'external';
  runtime_id: string;
  /** The daemon's id of this bot (the heartbeat methods take it). */
  subconscious_id: string;
  name: string;
  label: string;
  description: string;
  /** Your id of its direct thread (where the heartbeat acts). */
  thread_id: string;
  subconscious_thread_id: string;
  created_at: number;
  updated_at: number;
}

export interface RuntimeDispatch {
  /** The idempotency key: the same on every delivery of this dispatch. */
  id: string;
  runtime_id: string;
  kind: DispatchKind;
  /** Your ids. */
  bot_id: string;
  thread_id: string;
  task_id: string | null;
  /**
   * resume: the wake-up to continue with — host-authored, the untrusted parts (titles, the
   * pulse's hint, partial text) fenced as data; give it to your agent as the turn's input.
   * ask: the question for your person. cancel: why.
   */
  text: string;
  /** resume: the note the person sees (`Woke up to continue “…” — …`). */
  note: string | null;
  /** resume: the task's heartbeat attempt this is (1, 2, … up to `max_task_attempts`). */
  attempt: number | null;
  /** resume: how long the task is yours after `runtime.ack` without a report (each report of it, or of its run, renews it). */
  lease_seconds: number;
  /** resume: acknowledged, the task is yours until then. */
  lease_until: number | null;
  state: DispatchState;
  /** Deliveries made (webhook posts, polls that handed it out). */
  deliveries: number;
  /** The next delivery (a retry, or a redelivery when no ack came). */
  next_attempt_at: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  acked_at: number | null;
  finished_at: number | null;
  /** The daemon's ids of the same things. */
  subconscious: { bot_id: string; thread_id: string; task_id: string | null };
}

/** The body of a webhook `POST`. */
export interface RuntimeWebhook {
  type: 'runtime.dispatch';
  /** Which delivery of this dispatch this is (1, 2, …). */
  delivery: number;
  /** Daemon time, epoch ms. */
  sent_at: number;
  dispatch: RuntimeDispatch;
}

export interface RegisterResult {
  runtime: ExternalRuntime;
  bots: ExternalBot[];
  /** A new `instance_id`: the tasks the previous process had started are marked interrupted (the heartbeat resumes them). */
  restarted: boolean;
  /** Your ids of the tasks marked interrupted by this registration. */
  interrupted_task_ids: string[];
}

export interface ReportCounts {
  created: number;
  updated: number;
  unchanged: number;
}

export interface ReportResult {
  runtime_id: string;
  threads: ReportCounts;
  tasks: ReportCounts;
  messages: ReportCounts;
  runs: ReportCounts;
  approvals: ReportCounts;
  /** Items not applied because they name a dispatch that no longer holds the task (a newer resume does, or it expired). */
  stale: { kind: 'task' | 'run'; id: string; reason: string }[];
  /** Your ids of the tasks whose heartbeat resume this report ended. */
  settled_task_ids: string[];
}

export interface AckResult {
  dispatch: RuntimeDispatch;
  /** resume: the task is yours until then (renew it by reporting the task or its run). */
  lease_until: number | null;
}

// ── params ──────────────────────────────────────────────────────────────────

const runtimeId = z
  .string()
  .trim()
  .regex(RUNTIME_ID_PATTERN, 'must be 1-64 lower-case letters, digits, - or _, starting with a letter or digit (your runtime’s name for itself)');
const externalId = z
  .string()
  .trim()
  .regex(EXTERNAL_ID_PATTERN, 'must be 1-128 characters (letters, digits, . _ : @ / + -), starting with a letter or digit: your own id for it');
const dispatchId = z.string().trim().min(1, 'must be a dispatch id').max(200, 'is too long to be a dispatch id');
const instanceId = z.string().trim().min(1, 'must not be empty').max(200, 'at most 200 characters');
const envName = z
  .string()
  .trim()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name (letters, digits, _)');
const botName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, 'must be 1-32 lower-case letters, digits, - or _, starting with a letter');
const label = z.string().trim().min(1, 'must not be empty').max(80, 'at most 80 characters');
const text = z.string().max(100_000, 'at most 100000 characters');
const shortText = z.string().trim().max(4000, 'at most 4000 characters');
const epochMs = z.number().int().min(0).max(8_640_000_000_000_000);
const leaseSeconds = z.number().int().min(10, 'at least 10 seconds').max(86_400, 'at most 86400 seconds (a day)');

export const runtimeDeliveryParams = z.discriminatedUnion('kind', [
  z
    .strictObject({
      kind: z.literal('webhook'),
      url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).max(2000, 'at most 2000 characters'),
      secret_env: envName.optional(),
      secret_file: z.string().trim().min(1, 'must name a file').max(1000, 'at most 1000 characters').optional(),
    })
    .refine((d) => (d.secret_env === undefined) !== (d.secret_file === undefined), {
      message: 'give exactly one of secret_env (an environment variable of the daemon) or secret_file (a file it reads): the secret itself is never sent',
    }),
  z.strictObject({ kind: z.literal('poll') }),
]);

export const registerParams = z.strictObject({
  runtime_id: runtimeId,
  name: label.optional(),
  /** A fresh id per process of your runtime (a restart is told apart by it). */
  instance_id: instanceId.optional(),
  delivery: runtimeDeliveryParams,
  bots: z
    .array(
      z.strictObject({
        id: externalId,
        name: botName,
        label: label.optional(),
        description: z.string().trim().max(1000, 'at most 1000 characters').optional(),
        /** Your id of the bot's direct thread (default: the bot's id). */
        thread_id: externalId.optional(),
      }),
    )
    .max(200, 'at most 200 bots per registration')
    .refine((list) => new Set(list.map((b) => b.id)).size === list.length, 'names a bot id twice')
    .refine((list) => new Set(list.map((b) => b.name)).size === list.length, 'names a bot name twice')
    .default([]),
});

const reportThread = z.strictObject({
  id: externalId,
  kind: z.enum(['direct', 'group']),
  /** direct: its one bot; group: its members. */
  bot_ids: z.array(externalId).min(1, 'a thread has at least one bot').max(50, 'at most 50 bots'),
  name: label.optional(),
});

const reportTask = z.strictObject({
  id: externalId,
  bot_id: externalId,
  /** Default: the bot's direct thread. */
  thread_id: externalId.optional(),
  title: z.string().trim().min(1, 'must not be empty').max(500, 'at most 500 characters').optional(),
  status: z.enum(TASK_STATUSES),
  /** Why it failed or stopped: `interrupted` (cut off: a crash, a restart) and `preempted` are what the heartbeat resumes. */
  error_kind: z.enum(TASK_ERROR_KINDS).nullable().optional(),
  error: shortText.nullable().optional(),
  /** What was done so far (the resume's preamble shows it, so a resume does not redo it). */
  checkpoint: shortText.nullable().optional(),
  /** The dispatch this report is about: a report naming a dispatch that no longer holds the task is not applied (listed in `stale`). */
  dispatch_id: dispatchId.optional(),
});

const reportMessage = z.strictObject({
  id: externalId,
  thread_id: externalId,
  role: z.enum(MESSAGE_ROLES),
  /** The author of a bot message. */
  bot_id: externalId.optional(),
  task_id: externalId.optional(),
  text,
  status: z.enum(MESSAGE_STATUSES).optional(),
  error: shortText.nullable().optional(),
  /** The reply was cut off (its text is what was written). */
  interrupted: z.boolean().optional(),
  /** When it was written, epoch ms (default: when it is first reported). */
  created_at: epochMs.optional(),
});

const reportRun = z
  .strictObject({
    id: externalId,
    bot_id: externalId,
    task_id: externalId.optional(),
    /** `running` makes the bot busy (the heartbeat leaves it alone) for `lease_seconds`; report it again to renew. */
    status: z.enum(EXTERNAL_RUN_STATUSES),
    lease_seconds: leaseSeconds.optional(),
    /** Model calls and tokens the run used (the heartbeat's cost figures). */
    usage: z
      .strictObject({
        calls: z.number().int().min(0).max(1_000_000),
        input_tokens: z.number().int().min(0).max(1_000_000_000),
        output_tokens: z.number().int().min(0).max(1_000_000_000),
      })
      .optional(),
    dispatch_id: dispatchId.optional(),
    /**
     * The run's final answer, as your agent wrote it, reported with the run's end (`done`, `failed`,
     * `cancelled`). Its control lines act as a built-in bot's (seed 2 §8): `FOLLOWUP: 10m — …` or
     * `FOLLOWUP: when user replies — …` schedules a follow-up, `BLOCKED: …` asks the person (a
     * check-in). Read once, when the run is first reported ended. Needs `task_id`.
     */
    outcome: text.optional(),
  })
  .refine((r) => r.outcome === undefined || r.task_id !== undefined, {
    message: 'a run’s outcome needs its task_id (its follow-ups and check-ins belong to a task)',
    path: ['task_id'],
  });

const reportApproval = z.strictObject({
  id: externalId,
  bot_id: externalId,
  thread_id: externalId.optional(),
  task_id: externalId.optional(),
  tool: z.string().trim().min(1, 'must name the tool').max(200, 'at most 200 characters'),
  server: z.string().trim().max(200, 'at most 200 characters').optional(),
  reason: shortText.optional(),
  state: z.enum(EXTERNAL_APPROVAL_STATES),
  expires_at: epochMs.nullable().optional(),
  /** When it expired (the heartbeat's rule 5 compares it with the task's last resume). */
  expired_at: epochMs.nullable().optional(),
});

const list = <T extends z.ZodType>(item: T) => z.array(item).max(500, 'at most 500 items of one kind per report').optional();

export const reportParams = z
  .strictObject({
    runtime_id: runtimeId,
    threads: list(reportThread),
    tasks: list(reportTask),
    messages: list(reportMessage),
    runs: list(reportRun),
    approvals: list(reportApproval),
  })
  .refine((p) => [p.threads, p.tasks, p.messages, p.runs, p.approvals].some((l) => l !== undefined && l.length > 0), {
    message: 'report at least one of threads, tasks, messages, runs, approvals',
  });

export type RegisterParams = z.input<typeof registerParams>;
export type ReportParams = z.input<typeof reportParams>;
export type ReportedTask = z.output<typeof reportTask>;
export type ReportedMessage = z.output<typeof reportMessage>;
export type ReportedThread = z.output<typeof reportThread>;
export type ReportedRun = z.output<typeof reportRun>;
export type ReportedApproval = z.output<typeof reportApproval>;

// ── events ──────────────────────────────────────────────────────────────────

export type RuntimesEvents = {
  /** A runtime registered (or again), or was removed (`runtime: null`). */
  'runtime.changed': {
    runtime_id: string;
    /** @deprecated The same as `runtime_id` (the naming convention's old name), sent for one more release. */ id: string;
    runtime: ExternalRuntime | null;
  };
  /** A dispatch was written or changed state (delivered, acknowledged, retried, settled). */
  'runtime.dispatch_changed': { dispatch: RuntimeDispatch };
  /** A report was applied (what it changed). */
  'runtime.reported': { runtime_id: string; created: number; updated: number; settled_task_ids: string[] };
};

export const runtimesContract = defineContract<RuntimesEvents>()({
  methods: {
    'runtime.register': method(
      registerParams,
      'Register your agent runtime and its bots (idempotent, by your ids): {runtime_id, name?, instance_id? (fresh per process), delivery: {kind: webhook, url, secret_env | secret_file} | {kind: poll}, bots: [{id, name, label?, description?, thread_id?}]}. The heartbeat then watches those bots as it does built-in ones.',
    ).returns<RegisterResult>(),
    'runtime.report': method(
      reportParams,
      'Report what your bots do (idempotent, by your ids): {runtime_id, threads?, tasks? [{id, bot_id, status, error_kind?, checkpoint?, dispatch_id?}], messages? [{id, thread_id, role, text, …}], runs? [{id, bot_id, status, lease_seconds?, outcome? (its final answer: FOLLOWUP:/BLOCKED: lines act as a built-in bot’s)}], approvals?}. A person’s new message preempts a heartbeat resume; a task reported done/failed settles its resume.',
    ).returns<ReportResult>(),
    'runtime.poll': method(
      z.strictObject({
        runtime_id: runtimeId,
        /** Long-poll: wait up to this long for a dispatch (default 0: answer at once). */
        wait_seconds: z.number().int().min(0).max(30, 'at most 30 seconds').default(0),
        limit: z.number().int().min(1).max(50, 'at most 50').default(10),
      }),
      'Dispatches waiting for a poll runtime (or a webhook one, as a fallback): {runtime_id, wait_seconds? (≤30, long-poll), limit?}. Each is handed out again after ack_seconds until runtime.ack.',
    ).returns<{ dispatches: RuntimeDispatch[] }>(),
    'runtime.ack': method(
      z.strictObject({ runtime_id: runtimeId, dispatch_id: dispatchId, instance_id: instanceId.optional() }),
      'Acknowledge a dispatch: {runtime_id, dispatch_id, instance_id?}. For a resume this is its start: the claimed task becomes yours under its lease, once — a second process acknowledging it, a resume whose claim was taken over, or one no longer wanted is a conflict (do not run it).',
    ).returns<AckResult>(),
    'runtime.dispatches': method(
      z.strictObject({
        runtime_id: runtimeId.optional(),
        /** Your bot id (with runtime_id). */
        bot_id: externalId.optional(),
        state: z.enum(DISPATCH_STATES).optional(),
        limit: z.number().int().min(1).max(200, 'at most 200').default(50),
      }),
      'Dispatches, newest first: {runtime_id?, bot_id?, state?, limit?} — what was sent, how often, the last delivery error.',
    ).returns<RuntimeDispatch[]>(),
    'runtime.list': method(
      z.strictObject({}),
      'The registered external runtimes: delivery (the secret named, never shown), bots, pending dispatches, the last delivery error, whether it is reachable now.',
    ).returns<ExternalRuntime[]>(),
    'runtime.bots': method(
      z.strictObject({ runtime_id: runtimeId.optional() }),
      'The external runtimes’ bots with what their reports say: {runtime_id?} → each bot, its runtime’s name, its status (idle, queued, working; the task it works on), when it was last reported, and whether its runtime is reachable.',
    ).returns<ExternalBotStatus[]>(),
    'runtime.unregister': method(
      z.strictObject({ runtime_id: runtimeId }),
      'Remove a runtime with its bots, threads, tasks and dispatches (the heartbeat forgets them).',
    ).returns<{ runtime_id: string; removed: true; bots: number }>(),
  },
  events: ['runtime.changed', 'runtime.dispatch_changed', 'runtime.reported'],
});

export type RuntimesMethods = (typeof runtimesContract)['methods'];
