/**
 * What the start banner and /healthz say about the worlds: which run, which are off and why
 * (the config file or the page's switch), and the hosts — modules that serve without a world.
 */
import type { App } from '../app/app.js';

export interface WorldsSummary {
  worlds: string[];
  /** Worlds that are off, with where: "subconscious.toml" or "switched off on the page". */
  off: Record<string, string>;
  hosts: string[];
}

export async function worldsSummary(app: App): Promise<WorldsSummary> {
  const statuses = await app.registry.status();
  const off: Record<string, string> = {};
  for (const s of statuses) if (!s.enabled) off[s.world] = s.disabled_by ? 'subconscious.toml' : 'switched off on the page';
  const worlds = statuses.map((s) => s.world);
  return { worlds, off, hosts: app.modules.map((m) => m.kind).filter((kind) => !worlds.includes(kind)) };
}

/** `memory, tasks (off: subconscious.toml), conscious` */
export function worldsLine(summary: WorldsSummary): string {
  return summary.worlds.map((w) => (summary.off[w] ? `${w} (off: ${summary.off[w]})` : w)).join(', ') || '(none)';
}
