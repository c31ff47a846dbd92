import type { TabDefinition } from '../types.js';
import { UsageTab } from './UsageTab.js';

export const tab: TabDefinition = { id: 'usage', label: 'Usage', order: 20, Component: UsageTab };
