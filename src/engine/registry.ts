/**
 * The instances of a process: created from the catalog, started and stopped together, triggered
 * by name or all at once. Teardown stops every tick (each stays checkpointed) and closes worlds.
 */
import { SubconsciousError } from '../core/errors.js';
import { Instance, type EngineDeps, type InstanceOptions } from './instance.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';
import type { InstanceStatus, TickOutcome, World } from './types.js';

export class Registry {
  private readonly instances = new Map<string, Instance>();
  readonly scheduler: Scheduler;

  constructor(
    private readonly deps: EngineDeps,
    schedulerOptions: SchedulerOptions = {},
  ) {
    const alone = schedulerOptions.alone ?? deps.alone;
    this.scheduler = new Scheduler(() => [...this.instances.values()], deps.clock, deps.log, alone ? { ...schedulerOptions, alone } : schedulerOptions);
  }

  add(world: World, opts: InstanceOptions = {}): Instance {
    const instance = new Instance(world, this.deps, opts);
    if (this.instances.has(instance.name)) throw new SubconsciousError('conflict', `an instance named "${instance.name}" is already registered`);
    this.instances.set(instance.name, instance);
    return instance;
  }

  get(name: string): Instance {
    const instance = this.instances.get(name);
    if (!instance) {
      throw new SubconsciousError('not_found', `no world named "${name}"`, { hint: `known worlds: ${this.names().join(', ') || '(none)'}` });
    }
    return instance;
  }

  names(): string[] {
    return [...this.instances.keys()];
  }

  list(): Instance[] {
    return [...this.instances.values()];
  }

  start(): void {
    this.scheduler.start();
  }

  /**
   * Run now in the background: returns the worlds asked; the ticks run on. A world ticking already
   * runs once more right after (presses in between join that one): a press never supersedes.
   */
  trigger(kind: string | 'all' = 'all'): { triggered: string[]; done: Promise<TickOutcome[]> } {
    const targets = kind === 'all' ? this.list() : [this.get(kind)];
    const done = Promise.all(targets.map((i) => this.scheduler.runNow(i)));
    return { triggered: targets.map((i) => i.name), done };
  }

  /**
   * Run now as a person asks it (RPC, the page): a world that is off is not run, and says why.
   * Asked by name, that is a `world_off` error; asked for all, the answer lists it as skipped.
   */
  async requestRun(
    kind: string | 'all' = 'all',
  ): Promise<{ triggered: string[]; skipped: Array<{ world: string; reason: string }>; done: Promise<TickOutcome[]> }> {
    const asked = kind === 'all' ? this.list() : [this.get(kind)];
    const on: Instance[] = [];
    const skipped: Array<{ world: string; reason: string }> = [];
    for (const instance of asked) {
      const off = await instance.offReason();
      const reason = off === null ? null : `${instance.name} is off: ${off}`;
      if (reason === null) on.push(instance);
      else if (kind !== 'all') throw new SubconsciousError('world_off', `${reason}: nothing was run.`, { details: { world: instance.name } });
      else skipped.push({ world: instance.name, reason });
    }
    const done = Promise.all(on.map((i) => this.scheduler.runNow(i)));
    return { triggered: on.map((i) => i.name), skipped, done };
  }

  /** One tick of each named world (or all), awaited: `subconscious tick`. */
  async tickOnce(kind: string | 'all' = 'all'): Promise<TickOutcome[]> {
    const targets = kind === 'all' ? this.list() : [this.get(kind)];
    return Promise.all(targets.map((i) => i.tick()));
  }

  status(): Promise<InstanceStatus[]> {
    return Promise.all(this.list().map((i) => i.status()));
  }

  async setEnabled(name: string, enabled: boolean): Promise<void> {
    await this.get(name).setEnabled(enabled);
    if (enabled) this.scheduler.dueNow(name);
  }

  /** The config's hard off changed live (see `Instance.setDisabledBy`); back on, it ticks at once when its switch is on. */
  async setDisabledBy(name: string, reason: string | null): Promise<void> {
    const instance = this.get(name);
    instance.setDisabledBy(reason);
    if (reason === null && (await instance.isEnabled())) this.scheduler.dueNow(name);
  }

  /** The world's interval changed: move its next tick (see `Scheduler.reschedule`). */
  reschedule(name: string): Promise<number | null> {
    return this.scheduler.reschedule(this.get(name));
  }

  /** Lift a world's rate-cap halt and tick it at once (it halts again if the requests still do not fit). */
  async clearHalt(name: string): Promise<boolean> {
    const instance = this.get(name);
    const cleared = await instance.clearHalt();
    if (cleared) void this.scheduler.fire(instance, false);
    return cleared;
  }

  /** Stop the loop and every tick, then close the worlds. Safe to call twice. */
  async stop(): Promise<void> {
    const stopping = this.scheduler.stop();
    await Promise.all(this.list().map((i) => i.stop()));
    await stopping;
    for (const instance of this.list()) await instance.world.close?.().catch(() => undefined);
  }
}
