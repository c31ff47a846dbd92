/**
 * The tasks world's view of the system's health (issue 10): the models (a `GET /models` probe,
 * no model call, nothing in the ledger) and the skills (MCP servers), probed at start and every
 * few minutes — not only when a tick fails — so the page can say "the model is unavailable"
 * before anyone waits for a tick, the situation report gets its system-health section, and a
 * skill-related escalation resolves by itself once its skill is healthy again.
 */
import { describeError } from '../../core/errors.js';
import type { Clock } from '../../core/index.js';
import type { ModelHealth, SkillHealthRow } from '../../protocol/tasks.js';
import type { ModelsProbe, SkillHealth, SkillsHealth } from './types.js';

/** What each role's absence stops, in words a person knows from the page. */
export const ROLE_NEEDED_FOR: Record<'local' | 'agent', string> = {
  local: 'deciding what each task needs, and short text answers',
  agent: 'tasks that use tools, and approved actions (“Go ahead”)',
};

export interface HealthSnapshot {
  models: ModelHealth[];
  /** undefined: no skills are wired; `skillsError`: they could not be read. */
  skills: SkillHealth[] | undefined;
  skillsError: string | undefined;
  checkedAt: number | null;
}

export interface HealthMonitorDeps {
  clock: Clock;
  models?: ModelsProbe | undefined;
  skills?: SkillsHealth | undefined;
  /** Roles to probe (`agent` only where the agent runner is wired). */
  roles: readonly ('local' | 'agent')[];
  intervalMs: number;
  /** Told after every check (skill-related escalations resolve here), and whether anything changed. */
  onChecked?: ((snapshot: HealthSnapshot, changed: boolean) => void | Promise<void>) | undefined;
  log?: { warn(obj: object, msg: string): void } | undefined;
}

export class HealthMonitor {
  private snapshot: HealthSnapshot;
  private inflight: Promise<HealthSnapshot> | null = null;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly deps: HealthMonitorDeps) {
    this.snapshot = {
      models: deps.roles.map((role) => ({
        role,
        model: safeModel(deps.models, role),
        available: null,
        reason: null,
        checked_at: null,
        needed_for: ROLE_NEEDED_FOR[role],
      })),
      skills: undefined,
      skillsError: undefined,
      checkedAt: null,
    };
  }

  /** The last snapshot, as it is (no I/O). */
  current(): HealthSnapshot {
    return this.snapshot;
  }

  /** The snapshot, checked again first when it is older than `maxAgeMs` (or never was). */
  async fresh(maxAgeMs: number): Promise<HealthSnapshot> {
    const at = this.snapshot.checkedAt;
    if (at !== null && this.deps.clock.now() - at < maxAgeMs) return this.snapshot;
    return this.check();
  }

  /** Probe the models and the skills now (concurrent callers share one check). */
  check(): Promise<HealthSnapshot> {
    this.inflight ??= this.run().finally(() => (this.inflight = null));
    return this.inflight;
  }

  /** Check at once, then every `intervalMs` until `close()`. */
  start(): void {
    if (this.loop) return;
    this.loop = (async () => {
      while (!this.stopping.signal.aborted) {
        await this.check().catch((err: unknown) => this.deps.log?.warn({ err: describeError(err) }, 'health check failed'));
        await this.deps.clock.sleep(this.deps.intervalMs, this.stopping.signal).catch(() => undefined);
      }
    })();
  }

  /** When the loop checks next (null when it does not run). */
  nextCheckAt(): number | null {
    return this.loop && this.snapshot.checkedAt !== null ? this.snapshot.checkedAt + this.deps.intervalMs : null;
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.inflight?.catch(() => undefined);
  }

  private async run(): Promise<HealthSnapshot> {
    const now = () => this.deps.clock.now();
    const models = await Promise.all(
      this.deps.roles.map(async (role): Promise<ModelHealth> => {
        const base = { role, model: safeModel(this.deps.models, role), needed_for: ROLE_NEEDED_FOR[role] };
        if (!this.deps.models) return { ...base, available: null, reason: null, checked_at: null };
        try {
          const probe = await this.deps.models.probe(role);
          return { ...base, available: probe.available, reason: probe.available ? null : (probe.reason ?? 'no answer'), checked_at: now() };
        } catch (err) {
          return { ...base, available: false, reason: describeError(err), checked_at: now() };
        }
      }),
    );
    let skills: SkillHealth[] | undefined;
    let skillsError: string | undefined;
    const source = this.deps.skills;
    if (source) {
      try {
        skills = await (source.check ? source.check() : source.health());
      } catch (err) {
        skillsError = describeError(err);
      }
    }
    const next: HealthSnapshot = { models, skills, skillsError, checkedAt: now() };
    const changed = signature(next) !== signature(this.snapshot);
    this.snapshot = next;
    await this.deps.onChecked?.(next, changed);
    return next;
  }
}

function safeModel(models: ModelsProbe | undefined, role: 'local' | 'agent'): string {
  try {
    return models?.endpoint(role).model ?? '';
  } catch {
    return '';
  }
}

/** What makes two snapshots different for a person (not the times they were taken). */
function signature(s: HealthSnapshot): string {
  return JSON.stringify({
    models: s.models.map((m) => [m.role, m.available, m.reason]),
    skills: s.skills?.map((k) => [k.name, k.status]) ?? null,
    skillsError: s.skillsError ?? null,
  });
}

export function skillRows(skills: SkillHealth[] | undefined): SkillHealthRow[] | null {
  return skills ? skills.map((s) => ({ name: s.name, status: s.status, error: s.error ?? null })) : null;
}

/** A skill counts as healthy when connected (or starting up after a restart that is going well). */
export function isHealthy(status: string): boolean {
  return status === 'connected';
}
