/**
 * The page's tabs, in `order`. Adding a tab is adding a folder: `tabs/<name>/index.ts` exporting
 * `tab: TabDefinition`. Vite collects them at build time.
 */
import type { TabDefinition } from './types.js';

export type { TabDefinition } from './types.js';

const modules = import.meta.glob<{ tab: TabDefinition }>('./*/index.ts', { eager: true });

export const tabs: readonly TabDefinition[] = Object.entries(modules)
  .map(([file, m]) => {
    if (!m.tab) throw new Error(`${file} must export \`tab\` (a TabDefinition)`);
    return m.tab;
  })
  .sort((a, b) => a.order - b.order || a.id.localeCompare(b.id));
