import type { TabDefinition } from '../types.js';
import { SteeringTab } from './SteeringTab.js';

export const tab: TabDefinition = { id: 'steering', label: 'Steering', order: 18, Component: SteeringTab };
