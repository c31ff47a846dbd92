/** The page's tabs, in order. Adding a tab: a folder under `tabs/` and one line here. */
import type { TabDefinition } from './types.js';
import { subconsciousTab } from './subconscious/index.js';
import { usageTab } from './usage/index.js';
import { skillsTab } from './skills/index.js';

export type { TabDefinition } from './types.js';

export const tabs: readonly TabDefinition[] = [
  subconsciousTab,
  usageTab,
  skillsTab,
];
