/**
 * The bots host's events (payload types live in the contract, `protocol/bots.ts`, so the page
 * and the CLI share them). Every change is one of these; message text streams as deltas.
 */
import type { BotsEvents } from '../protocol/bots.js';

export type { BotsEvents } from '../protocol/bots.js';

export type BotsEmit = <K extends keyof BotsEvents>(type: K, data: BotsEvents[K]) => void;

/** An emitter that drops everything (tests, tools that do not listen). */
export const noEmit: BotsEmit = () => undefined;
