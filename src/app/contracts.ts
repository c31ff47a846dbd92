/**
 * The contracts the app serves itself (the engine's, the ledger's, the agent runner's); every
 * other one comes from a module. With the modules' they make up what the daemon serves, which
 * `productContracts` (src/protocol) must list exactly: test/app/product-contracts.test.ts checks.
 */
import { agentContract, engineContract, usageContract } from '../protocol/index.js';

export const appContracts = [engineContract, usageContract, agentContract] as const;
