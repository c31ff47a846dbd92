/**
 * The worlds this product ships and the services they need (tools, the agent runner), wired
 * from the resolved config. A new world is a factory in `src/worlds/` plus one entry here.
 */
import type { RpcMethod } from '../core/index.js';
import { WorldCatalog, type EngineDeps, type Registry } from '../engine/index.js';
import { usageRpcMethods } from '../server/methods/usage.js';
import type { Config } from './config.js';

export interface WorldSetup {
  workspace: string;
  config: Config;
  deps: EngineDeps;
  registry: Registry;
}

export interface AppServices {
  rpcMethods: RpcMethod[];
  close(): Promise<void>;
}

export async function defineWorlds(setup: WorldSetup): Promise<AppServices> {
  const { deps } = setup;
  const catalog = new WorldCatalog<WorldSetup>();
  for (const kind of catalog.kinds()) setup.registry.add(catalog.makeWorld(kind, setup));
  return {
    rpcMethods: [...usageRpcMethods(deps.db, deps.clock)],
    close: async () => undefined,
  };
}
