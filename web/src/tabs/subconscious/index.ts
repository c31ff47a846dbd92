import type { TabDefinition } from '../types.js';
import { SubconsciousTab } from './SubconsciousTab.js';

export const tab: TabDefinition = { id: 'subconscious', label: 'Subconscious', order: 10, Component: SubconsciousTab };
