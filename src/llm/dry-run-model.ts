/**
 * A dry-run model for `subconscious simulate`: the AI SDK's provider-level model interface,
 * answered in-process by a caller-supplied function, so no server is ever contacted. It reports
 * no usage on purpose: the metering middleware then estimates tokens (4 chars/token) and flags
 * them `estimated`, exactly as it does for a server that sends no usage. It is meant to be handed
 * to `createLlm({ inProcessModel })`, so every call still goes through the meter and the ledger.
 */
import type { ProviderModel } from './meter.js';

type CallOptions = Parameters<ProviderModel['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<ProviderModel['doGenerate']>>;
type StreamResult = Awaited<ReturnType<ProviderModel['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;

/** What the model was asked, as plain text. */
export interface DryRunRequest {
  /** The system messages, joined by blank lines. */
  system: string;
  /** Every other message's text, joined by blank lines. */
  prompt: string;
}

export interface DryRunModelOptions {
  /** Shown as the model id (the ledger records the configured model name, not this). */
  modelId: string;
  /** The reply text for one call. */
  reply: (request: DryRunRequest) => string;
}

/** No figures: the meter estimates both sides. */
const NO_USAGE: GenerateResult['usage'] = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
};

const STOP: GenerateResult['finishReason'] = { unified: 'stop', raw: 'stop' };

export function dryRunModel(opts: DryRunModelOptions): ProviderModel {
  const answer = (options: CallOptions): string => {
    if (options.abortSignal?.aborted) throw options.abortSignal.reason;
    return opts.reply(requestOf(options));
  };
  return {
    specificationVersion: 'v3',
    provider: 'subconscious-dry-run',
    modelId: opts.modelId,
    supportedUrls: {},
    async doGenerate(options) {
      return { content: [{ type: 'text', text: answer(options) }], finishReason: STOP, usage: NO_USAGE, warnings: [] };
    },
    async doStream(options) {
      const text = answer(options);
      const parts: StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 'dry-run' },
        { type: 'text-delta', id: 'dry-run', delta: text },
        { type: 'text-end', id: 'dry-run' },
        { type: 'finish', usage: NO_USAGE, finishReason: STOP },
      ];
      return {
        stream: new ReadableStream<StreamPart>({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  };
}

function requestOf(options: CallOptions): DryRunRequest {
  const system: string[] = [];
  const prompt: string[] = [];
  for (const message of options.prompt) {
    if (message.role === 'system') {
      system.push(message.content);
      continue;
    }
    const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (text) prompt.push(text);
  }
  return { system: system.join('\n\n'), prompt: prompt.join('\n\n') };
}
