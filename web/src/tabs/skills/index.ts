import type { TabDefinition } from '../types.js';
import { SkillsTab } from './SkillsTab.js';

export const skillsTab: TabDefinition = { id: 'skills', label: 'Skills', Component: SkillsTab };
