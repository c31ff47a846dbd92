import type { ComponentType } from 'react';

/**
 * A tab of the page. A new tab is one folder under `tabs/<name>/` whose `index.ts` exports
 * `tab: TabDefinition`; nothing else changes.
 */
export interface TabDefinition {
  /** URL-safe id, used in the address (`#/<id>`). */
  id: string;
  label: string;
  /** Position in the tab bar, lowest first. */
  order: number;
  Component: ComponentType;
}
