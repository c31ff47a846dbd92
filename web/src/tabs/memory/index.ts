import type { TabDefinition } from '../types.js';
import { MemoryTab } from './MemoryTab.js';

export const tab: TabDefinition = { id: 'memory', label: 'Memory', order: 16, Component: MemoryTab };
