import type { TabDefinition } from '../types.js';
import { UsageTab } from './UsageTab.js';

export const usageTab: TabDefinition = { id: 'usage', label: 'Usage', Component: UsageTab };
