import type { UsageGroup } from '../../api/types.js';

export type Metric = 'calls' | 'input_tokens' | 'output_tokens';
export type GroupBy = 'by_world' | 'by_purpose';

export const METRIC_LABEL: Record<Metric, string> = { calls: 'Calls', input_tokens: 'Input tokens', output_tokens: 'Output tokens' };
export const GROUP_LABEL: Record<GroupBy, string> = { by_world: 'By world', by_purpose: 'By purpose' };

export function value(g: Pick<UsageGroup, Metric>, m: Metric): number {
  return g[m];
}

/** Model calls happen during ticks and agent runs. */
export const USAGE_EVENTS = ['tick.finished', 'agent.run'] as const;
