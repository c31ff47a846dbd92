import type { TabDefinition } from '../types.js';
import { ActionablesTab } from './ActionablesTab.js';

export const tab: TabDefinition = { id: 'actionables', label: 'Actionables', order: 14, Component: ActionablesTab };
