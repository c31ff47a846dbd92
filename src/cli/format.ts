/** Plain-text output for the CLI: one line per world, readable without the page. */
import type { TickOutcome } from '../engine/index.js';
import { describeBackoff, type StatusResult } from '../protocol/index.js';

function ago(at: number | null, now = Date.now()): string {
  if (!at) return 'never';
  const s = Math.round((now - at) / 1000);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return new Date(at).toISOString();
}

/** HH:MM in this machine's zone (the person reading the line is here). */
function hourMinute(at: number): string {
  return new Date(at).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
}

export function printTickOutcomes(outcomes: TickOutcome[], print: (line: string) => void): void {
  if (outcomes.length === 0) print('no worlds are configured');
  for (const o of outcomes) print(`${o.world}: ${o.kind}${o.resumed ? ' (resumed)' : ''} — ${o.message} (${o.durationMs} ms)`);
}

export function printStatus(status: StatusResult, print: (line: string) => void): void {
  if (status.instances.length === 0) print('no worlds are configured');
  for (const i of status.instances) {
    const flags = [
      i.enabled ? 'enabled' : i.disabled_by ? `disabled (${i.disabled_by})` : 'disabled',
      i.running ? 'running' : null,
      i.halted ? `HALTED: ${i.halt_reason}` : null,
      i.provider_available === false ? 'model unavailable' : null,
      i.consecutive_failures > 0 ? `${i.consecutive_failures} failed` : null,
    ].filter(Boolean);
    print(
      `${i.world}: ${flags.join(', ')} — every ${i.interval_minutes} min, ${i.total_ticks} ticks, last ${ago(i.last_tick_at)}${i.last_summary ? ` (${i.last_summary})` : ''}`,
    );
    if (i.provider_available === false) print(`  model: ${i.provider_unavailable_reason}`);
    for (const m of i.optional_models_unavailable ?? []) print(`  ${m.role} model unavailable: ${m.reason} (the work that needs it fails until it answers)`);
    if (i.backoff) print(`  waiting: ${describeBackoff(i.backoff, hourMinute)}`);
    else if (i.last_error && i.consecutive_failures > 0 && i.last_error !== i.provider_unavailable_reason) print(`  last error: ${i.last_error}`);
  }
}
