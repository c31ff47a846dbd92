/** The scripted model server lives in `devtools/` so benchmarks can use it too (they import nothing from `test/`). */
export * from '../../devtools/model-server.js';

/** The daemon's environment for both model roles on a scripted server (`SUBCONSCIOUS_*`). */
export const scriptedModelEnv = (server: { baseUrl: string }): Record<string, string> => ({
  SUBCONSCIOUS_LOCAL_BASE_URL: server.baseUrl,
  SUBCONSCIOUS_AGENT_BASE_URL: server.baseUrl,
  SUBCONSCIOUS_LOCAL_MODEL: 'scripted-model',
  SUBCONSCIOUS_AGENT_MODEL: 'scripted-model',
});
