import type { TabDefinition } from '../types.js';
import { SkillsTab } from './SkillsTab.js';

export const tab: TabDefinition = { id: 'skills', label: 'Skills', order: 30, Component: SkillsTab };
