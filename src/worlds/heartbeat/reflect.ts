/**
 * Tier 1 as the tick's reflect stage (seed 2 §6.1): the pulses of this tick, at most
 * `pulse_concurrency` at a time. Each pulse registers with the host's single-flight (a person's
 * message or a stop aborts it), spends one pulse of the bot's and the store-wide day budget
 * before the call, makes one attempt (`retry: false`) at temperature 0 with the output capped, and
 * is cut at its timeout. Its registration is released in `finally`, before commit re-checks.
 */
import { SubconsciousError, describeError } from '../../core/index.js';
import { isModelError } from '../../llm/index.js';
import type { HeartbeatCore } from './core.js';
import { PULSE_SYSTEM, parseVerdict, pulsePrompt, pulseReplySchema, type PulseVerdict } from './pulse.js';
import type { HeartbeatObservation, Plan } from './triage.js';

export const PULSE_PURPOSE = 'heartbeat_pulse';

export type PulseResult =
  | { kind: 'verdict'; verdict: PulseVerdict; ms: number; model: string; inputTokens: number; outputTokens: number; raw: string }
  /** The bot became busy before the pulse could start (single-flight). */
  | { kind: 'busy'; reason: string }
  /** A person's message or a stop aborted it: not an error. */
  | { kind: 'aborted'; reason: string; ms: number }
  | { kind: 'budget'; scope: 'bot' | 'global' }
  | { kind: 'error'; error: string; errorKind: string; ms: number; model: string };

export interface HeartbeatReflection {
  results: Record<string, PulseResult>;
}

export async function runPulses(core: HeartbeatCore, obs: HeartbeatObservation, signal: AbortSignal): Promise<HeartbeatReflection> {
  const plans = obs.plans.filter((p) => p.pulse);
  const results: Record<string, PulseResult> = {};
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const plan = plans[next++]!;
      results[plan.botId] = await pulseOne(core, obs, plan, signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(obs.settings.pulse_concurrency, plans.length) }, worker));
  return { results };
}

async function pulseOne(core: HeartbeatCore, obs: HeartbeatObservation, plan: Plan, tickSignal: AbortSignal): Promise<PulseResult> {
  const p = plan.pulse!;
  const controller = new AbortController();
  const release = core.host.beginPulse(plan.botId, controller);
  if (!release) return { kind: 'busy', reason: 'the bot became busy before its pulse' };
  const started = core.now();
  const model = p.model ? `${p.role}:${p.model}` : p.role;
  const timeout = new AbortController();
  const stopTimer = new AbortController();
  const timeoutMs = Math.round(obs.settings.pulse_timeout_seconds * 1000);
  void core.d.clock.sleep(timeoutMs, stopTimer.signal).then(
    () => timeout.abort(new SubconsciousError('model_timeout', `the pulse took longer than ${obs.settings.pulse_timeout_seconds} s`)),
    () => undefined,
  );
  try {
    if (tickSignal.aborted) throw tickSignal.reason;
    const spent = await core.reserve(plan.botId, 'pulses', plan.settings, obs.settings);
    if (spent !== 'ok') return { kind: 'budget', scope: spent };
    const { text, usage } = await core.d.llm.text(
      {
        world: core.world,
        purpose: PULSE_PURPOSE,
        role: p.role,
        ...(p.model ? { model: p.model } : {}),
        retry: false,
        signal: AbortSignal.any([tickSignal, controller.signal, timeout.signal]),
      },
      {
        system: PULSE_SYSTEM,
        prompt: pulsePrompt(p.digest.text),
        maxOutputTokens: obs.settings.pulse_max_output_tokens,
        maxTokensKey: 'worlds.heartbeat.pulse_max_output_tokens',
        temperature: 0,
        jsonSchema: pulseReplySchema,
      },
    );
    const candidates = plan.triage.kind === 'candidates' ? plan.triage.candidates.map((c) => c.id) : [];
    return {
      kind: 'verdict',
      verdict: parseVerdict(text, candidates, { waitingUser: p.waitingUser }),
      ms: core.now() - started,
      model,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      raw: text.slice(-400),
    };
  } catch (err) {
    if (tickSignal.aborted) throw tickSignal.reason ?? err;
    if (controller.signal.aborted) return { kind: 'aborted', reason: describeError(controller.signal.reason ?? err), ms: core.now() - started };
    const ms = core.now() - started;
    if (timeout.signal.aborted) return { kind: 'error', error: describeError(timeout.signal.reason), errorKind: 'timeout', ms, model };
    return { kind: 'error', error: describeError(err), errorKind: isModelError(err) ? err.kind : 'unknown', ms, model };
  } finally {
    stopTimer.abort();
    release();
  }
}
