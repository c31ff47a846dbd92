/**
 * `makeWorld(kind, deps)`: the one place a world kind becomes a World. The engine knows no world
 * by name; the composition root (`app/`) defines the kinds it ships.
 */
import { SubconsciousError } from '../core/errors.js';
import type { World } from './types.js';

export type WorldFactory<D> = (deps: D) => World;

export class WorldCatalog<D> {
  private readonly factories = new Map<string, WorldFactory<D>>();

  define(kind: string, factory: WorldFactory<D>): this {
    if (!/^[a-z][a-z0-9_-]*$/.test(kind)) throw new Error(`invalid world kind "${kind}"`);
    this.factories.set(kind, factory);
    return this;
  }

  kinds(): string[] {
    return [...this.factories.keys()];
  }

  makeWorld(kind: string, deps: D): World {
    const factory = this.factories.get(kind);
    if (!factory) throw new SubconsciousError('config_invalid', `unknown world kind "${kind}"`, { hint: `known kinds: ${this.kinds().join(', ')}` });
    const world = factory(deps);
    if (world.kind !== kind) throw new Error(`factory for "${kind}" made a world of kind "${world.kind}"`);
    return world;
  }
}
