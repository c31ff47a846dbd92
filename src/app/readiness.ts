/**
 * `/readyz`: is this daemon able to do its work, not just up (`/healthz`)? The store answers, its
 * schema is current (every migration applied), and each model endpoint answers its probe.
 */
import { describeError } from '../core/index.js';
import type { ReadyCheck, ReadyReport } from '../protocol/index.js';
import { pendingMigrations } from '../store/index.js';
import type { App } from './app.js';

export async function readiness(app: Pick<App, 'store' | 'modules' | 'llm'>): Promise<ReadyReport> {
  const checks: Record<string, ReadyCheck> = {};
  try {
    const pending = await pendingMigrations(
      app.store.db,
      app.modules.flatMap((m) => (m.tables ? [m.tables.migrations] : [])),
    );
    checks.store = { ok: true, detail: app.store.location };
    checks.migrations = pending.length
      ? { ok: false, detail: `not applied: ${pending.join(', ')} (restart the daemon: it applies them at start)` }
      : { ok: true, detail: null };
  } catch (err) {
    checks.store = { ok: false, detail: describeError(err) };
    checks.migrations = { ok: false, detail: 'unknown: the store did not answer' };
  }
  const models = await modelChecks(app);
  for (const role of ['local', 'agent'] as const) checks[`model_${role}`] = models[role];
  return { ready: Object.values(checks).every((c) => c.ok), checks };
}

/** Does each model endpoint answer its probe (cached for a few seconds by the prober)? For /readyz and /healthz. */
export async function modelChecks(app: Pick<App, 'llm'>): Promise<Record<'local' | 'agent', ReadyCheck>> {
  const check = async (role: 'local' | 'agent'): Promise<ReadyCheck> => {
    const endpoint = app.llm.endpoint(role);
    const probe = await app.llm.probe(role).catch((err: unknown) => ({ available: false, reason: describeError(err) }));
    return probe.available
      ? { ok: true, detail: `${endpoint.model} at ${endpoint.baseUrl}` }
      : { ok: false, detail: `${endpoint.model} at ${endpoint.baseUrl}: ${probe.reason ?? 'it did not answer'}` };
  };
  const [local, agent] = await Promise.all([check('local'), check('agent')]);
  return { local, agent };
}
