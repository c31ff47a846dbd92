/**
 * The coordination layer's migrations. `createCoordinator` applies them (the store knows no
 * layer's tables); the app also lists them with the modules' sets. Append; never edit one shipped.
 */
import type { MigrationSet } from '../../store/index.js';
import * as m0001 from './0001_coord_tables.js';
import * as m0002 from './0002_settled_at.js';
import * as m0003 from './0003_claim_indexes.js';
import * as m0004 from './0004_narrow_hold_indexes.js';

export const coordinationMigrations: MigrationSet = {
  'coordination/0001_coord_tables': m0001,
  'coordination/0002_settled_at': m0002,
  'coordination/0003_claim_indexes': m0003,
  'coordination/0004_narrow_hold_indexes': m0004,
};
