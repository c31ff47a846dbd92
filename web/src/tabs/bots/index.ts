import type { TabDefinition } from '../types.js';
import { BotsTab } from './BotsTab.js';

export const tab: TabDefinition = { id: 'bots', label: 'Bots', order: 12, Component: BotsTab };
