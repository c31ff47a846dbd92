/** Plain-text output for the CLI: one line per world, readable without the page. */
import type { TickOutcome } from '../engine/index.js';
import { describeBackoff, type ClusterStatus, type StatusResult } from '../protocol/index.js';

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
  for (const m of status.structured_output ?? []) {
    const mode = m.configured === 'auto' ? `auto, using ${m.in_use}` : m.in_use;
    const learned = m.learned ? ` (learned ${new Date(m.learned.learned_at).toISOString()}: ${m.learned.reason})` : '';
    print(`model ${m.role} (${m.model}): structured output ${mode}${learned}`);
  }
  if (status.config_file?.error) print(`subconscious.toml has an error: ${status.config_file.error} — still using the last good settings`);
  if (status.config_file?.needs_restart.length) print(`subconscious.toml: ${status.config_file.needs_restart.join(', ')} changed, in effect after a restart`);
  if (status.cluster) printCluster(status.cluster, print);
}

/** The workers (one line each), the queues with work in them, and the newest dead letters. */
export function printCluster(cluster: ClusterStatus, print: (line: string) => void, now = Date.now()): void {
  const alive = cluster.workers.filter((w) => w.alive).length;
  print(`workers: ${alive} alive of ${cluster.workers.length} seen (${cluster.store}, lease ${Math.round(cluster.lease_ms / 1000)} s)`);
  for (const w of cluster.workers) {
    const state = w.alive ? 'alive' : 'NOT ALIVE';
    print(`  ${w.id} — ${w.role}, ${w.host} pid ${w.pid}, ${state}, last seen ${ago(w.last_seen_at, now)}, ${w.jobs_held} held`);
  }
  const busy = cluster.queues.filter((q) => q.queued + q.active + q.failed + q.dead > 0);
  const sizes = (q: ClusterStatus['queues'][number]) =>
    `${q.queue} ${q.queued} queued, ${q.active} active${q.failed ? `, ${q.failed} failed` : ''}${q.dead ? `, ${q.dead} dead` : ''}`;
  if (busy.length) print(`queues: ${busy.map(sizes).join('; ')}`);
  if (cluster.dead_letters.length) {
    print(`dead letters (moved aside, newest first): ${cluster.dead_letters.length}`);
    for (const d of cluster.dead_letters.slice(0, 10)) print(`  ${d.queue} ${d.id}: ${d.reason}`);
  }
}
