import type { ComponentType } from 'react';

/**
 * A tab of the page. A new tab is one folder under `tabs/<name>/` whose `index.ts` exports a
 * `TabDefinition`, plus one line in `tabs/index.ts`.
 */
export interface TabDefinition {
  /** URL-safe id, used in the address (`#/<id>`). */
  id: string;
  label: string;
  Component: ComponentType;
}
