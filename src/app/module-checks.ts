/**
 * The rules a module list must keep, checked before anything opens: one module per kind; tables
 * and migrations namespaced by kind (names a module declares as shipped before modules keep
 * theirs); one owner per legacy state key; every service a module needs provided by the app or
 * an earlier module.
 */
import { AgentRunnerKey, ApprovalStoreKey, SkillsKey } from '../agent/index.js';
import { CoordinatorKey } from '../coordination/index.js';
import { PresenceKey } from '../core/index.js';
import type { WorldModule } from '../engine/index.js';

/** Services the app itself provides to every module. */
const APP_SERVICES = [AgentRunnerKey, ApprovalStoreKey, SkillsKey, PresenceKey, CoordinatorKey].map((k) => k.id);

export function checkModules(modules: readonly WorldModule[]): void {
  const kinds = new Set<string>();
  const tables = new Map<string, string>();
  const provided = new Set(APP_SERVICES);
  const legacyKeys = new Map<string, string>();
  for (const m of modules) {
    if (kinds.has(m.kind)) throw new Error(`two modules are named "${m.kind}"`);
    kinds.add(m.kind);
    const prefix = `${m.kind.replace(/-/g, '_')}_`;
    const shippedTables = new Set(m.tables?.shipped?.tables ?? []);
    const shippedMigrations = new Set(m.tables?.shipped?.migrations ?? []);
    for (const name of m.tables?.names ?? []) {
      if (!name.startsWith(prefix) && !shippedTables.has(name)) throw new Error(`module ${m.kind}: table "${name}" must start with "${prefix}"`);
      const owner = tables.get(name);
      if (owner) throw new Error(`modules ${owner} and ${m.kind} both declare table "${name}"`);
      tables.set(name, m.kind);
    }
    for (const name of Object.keys(m.tables?.migrations ?? {})) {
      if (!name.startsWith(`${m.kind}/`) && !shippedMigrations.has(name))
        throw new Error(`module ${m.kind}: migration "${name}" must be named "${m.kind}/NNNN_…"`);
    }
    for (const key of m.legacyStateKeys) {
      const owner = legacyKeys.get(key);
      if (owner) throw new Error(`modules ${owner} and ${m.kind} both claim the legacy state key "${key}"`);
      legacyKeys.set(key, m.kind);
    }
    for (const need of m.needs) {
      if (!provided.has(need.id)) throw new Error(`module ${m.kind} needs ${need.id}, which no module before it provides`);
    }
    for (const key of m.provides) {
      if (provided.has(key.id)) throw new Error(`module ${m.kind} provides ${key.id}, which is already provided`);
      provided.add(key.id);
    }
  }
}
