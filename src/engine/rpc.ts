/** The engine's RPC handlers (`protocol/engine.ts`): status from the store, Run now, enable, clear a halt, the configuration, the method list. */
import type { Handlers } from '../protocol/contract.js';
import type { Llm, ModelRole } from '../llm/types.js';
import { SubconsciousError } from '../core/index.js';
import type { ClusterStatus, ConfigValue, EffectiveConfig, ModelStructuredOutput, StatusResult, engineContract } from '../protocol/engine.js';
import type { Registry } from './registry.js';

export function engineRpcHandlers(
  registry: Registry,
  methods: () => Array<{ name: string; description: string }>,
  llm?: Pick<Llm, 'endpoint' | 'structuredOutput'>,
  /** The cluster's workers and queues (the app passes the coordinator's view). */
  cluster?: () => Promise<ClusterStatus>,
  /** The effective configuration with where each value came from (the app passes it; an embedder may not). */
  effective?: () => EffectiveConfig,
  /** Change one live setting (the app passes its live configuration). */
  setConfig?: (key: string, value: number | boolean | string) => Promise<{ value: ConfigValue; file: string }>,
  /** What the last hand edit of the configuration file left (the app passes its file watcher's findings). */
  configFile?: () => NonNullable<StatusResult['config_file']>,
): Handlers<(typeof engineContract)['methods']> {
  return {
    'rpc.methods': () => methods(),
    'subconscious.status': async (): Promise<StatusResult> => {
      const [instances, clusterStatus] = await Promise.all([registry.status(), cluster?.()]);
      // Seed 4 back-compat: the legacy top-level fields mirror the first registered world.
      const first = instances[0];
      return {
        instances,
        enabled: first?.enabled ?? false,
        total_ticks: first?.total_ticks ?? 0,
        consecutive_failures: first?.consecutive_failures ?? 0,
        last_tick_at: first?.last_tick_at ?? null,
        structured_output: structuredOutputs(llm),
        ...(clusterStatus ? { cluster: clusterStatus } : {}),
        ...(configFile ? { config_file: configFile() } : {}),
      };
    },
    'subconscious.trigger': async ({ world }) => {
      const { triggered, skipped } = await registry.requestRun(world ?? 'all');
      return { triggered, skipped };
    },
    'subconscious.set_enabled': async ({ world, enabled }) => {
      await registry.setEnabled(world, enabled);
      return { world, enabled };
    },
    'subconscious.clear_halt': async ({ world }) => ({ world, cleared: await registry.clearHalt(world) }),
    'subconscious.config': () => {
      if (!effective)
        throw new SubconsciousError('unavailable', 'This engine was started without a configuration file to show (it is embedded, not a daemon).');
      return effective();
    },
    'subconscious.config_set': ({ key, value }) => {
      if (!setConfig) throw new SubconsciousError('unavailable', 'This engine has no configuration file to change (it is embedded, not a daemon).');
      return setConfig(key, value);
    },
  };
}

const ROLES: readonly ModelRole[] = ['local', 'agent'];

/** What each role's endpoint takes as `response_format` (read from the model layer, which loaded it from the store). */
function structuredOutputs(llm: Pick<Llm, 'endpoint' | 'structuredOutput'> | undefined): ModelStructuredOutput[] {
  if (!llm?.structuredOutput) return [];
  return ROLES.map((role) => {
    const endpoint = llm.endpoint(role);
    return { role, base_url: endpoint.baseUrl, model: endpoint.model, ...llm.structuredOutput!(role) };
  });
}
