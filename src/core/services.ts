/**
 * Typed service keys: how modules meet without importing each other (DESIGN.md "Layers": the
 * heartbeat gets the bots host, conscious and memory get the memory store). The layer that owns a
 * service declares its key; the app registers the value once; a module asks by key.
 *
 *   export const MemoryStoreKey = serviceKey<MemoryStore>('memory.store');
 *   services.provide(MemoryStoreKey, store);   services.get(MemoryStoreKey)  // MemoryStore
 */
import { SubconsciousError } from './errors.js';

export interface ServiceKey<T> {
  readonly id: string;
  /** Never set: carries the service's type. */
  readonly __type?: T;
}

export function serviceKey<T>(id: string): ServiceKey<T> {
  return { id };
}

/** A value bound to its key (what a module provides). */
export interface Provision {
  readonly key: ServiceKey<unknown>;
  readonly value: unknown;
}

export function provide<T>(key: ServiceKey<T>, value: T): Provision {
  return { key, value };
}

export class Services {
  private readonly values = new Map<string, unknown>();

  add(provision: Provision): void {
    if (this.values.has(provision.key.id)) throw new Error(`service ${provision.key.id} is provided twice`);
    this.values.set(provision.key.id, provision.value);
  }

  /** A service the caller cannot work without: a missing one is a wiring mistake, said plainly. */
  get<T>(key: ServiceKey<T>): T {
    if (!this.values.has(key.id)) {
      throw new SubconsciousError('config_invalid', `the service ${key.id} is not available`, {
        hint: 'The module that provides it is not in the module list.',
      });
    }
    return this.values.get(key.id) as T;
  }

  /** A service the caller can do without (the tasks world without memory). */
  find<T>(key: ServiceKey<T>): T | undefined {
    return this.values.get(key.id) as T | undefined;
  }

  has(key: ServiceKey<unknown>): boolean {
    return this.values.has(key.id);
  }
}
