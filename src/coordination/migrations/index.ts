/**
 * The coordination layer's migrations. `createCoordinator` applies them (the store knows no
 * layer's tables); the app also lists them with the modules' sets. Append; never edit one shipped.
 */
import type { MigrationSet } from '../../store/index.js';
import * as m0001 from './0001_coord_tables.js';

export const coordinationMigrations: MigrationSet = {
  'coordination/0001_coord_tables': m0001,
};
