import type { TabDefinition } from '../types.js';
import { SubconsciousTab } from './SubconsciousTab.js';

export const subconsciousTab: TabDefinition = { id: 'subconscious', label: 'Subconscious', Component: SubconsciousTab };
