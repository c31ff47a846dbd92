/**
 * The conscious world's side of `subconscious simulate`: the dry-run model extracts nothing (an
 * empty JSON array, which the seed's schema accepts), so the figures are what a run costs to
 * *look*: the runs, the documents each read and the largest prompt. A run happens only when
 * memory changed (see the memory module's assumptions); every other tick is quiet.
 */
import type { SimulateHooks, SimulationSession } from '../../engine/index.js';
import type { consciousContract } from '../../protocol/conscious.js';
import type { ConsciousSettings } from './config.js';
import { isExtractionPrompt } from './prompt.js';
import type { ConsciousTables } from './tables.js';

type Methods = (typeof consciousContract)['methods'];

/** The meter's estimate: 4 characters per token. */
const CHARS_PER_TOKEN = 4;

export const consciousSimulation: SimulateHooks<ConsciousSettings, ConsciousTables, Methods> = {
  session(): SimulationSession<Methods> {
    const seen = { extractions: 0, largestPromptTokens: 0 };
    return {
      reply(request) {
        if (!isExtractionPrompt(request.prompt)) return undefined;
        seen.extractions++;
        seen.largestPromptTokens = Math.max(seen.largestPromptTokens, Math.ceil((request.system.length + request.prompt.length) / CHARS_PER_TOKEN));
        return '[]';
      },
      async finish(call) {
        const runs = await call('conscious.runs', { limit: 100 });
        return {
          runs: runs.length,
          extractions: seen.extractions,
          documents_read: runs.reduce((n, r) => n + r.documents, 0),
          largest_prompt_tokens: seen.extractions ? seen.largestPromptTokens : null,
          failed_runs: runs.filter((r) => r.status === 'failed').length,
        };
      },
      print(figures, print) {
        const n = (x: unknown) => Number(x).toLocaleString('en-US');
        const calls = Number(figures.extractions);
        if (calls === 0) return print('  conscious: no extraction (no new memory to read): 0 model calls');
        const largest = figures.largest_prompt_tokens === null ? '' : `, largest prompt ${n(figures.largest_prompt_tokens)} tokens`;
        print(`  conscious: ${n(calls)} extraction call${calls === 1 ? '' : 's'} over ${n(figures.documents_read)} documents read${largest}`);
      },
      assumptions: 'Conscious: the dry-run model extracts no actionables; a run happens only when memory changed, every other tick is quiet (0 model calls).',
    };
  },
};
