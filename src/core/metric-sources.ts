/**
 * Figures a module offers to `/metrics` (issue 18 item 9), by service key, so the server reads no
 * module's table and names no module: the bots host provides its bots' statuses, the runtimes
 * module its external bots'; the daemon hands whatever was provided to `createMetrics`.
 */
import { serviceKey } from './services.js';

/** One count of the `subconscious_bots` gauge: the bots of one host in one status. */
export interface BotStatusCount {
  /** `builtin` for the built-in bots host; an external runtime's id for its bots. */
  host: string;
  /** `idle`, `queued` or `working` (`bots.list`'s status). */
  status: string;
  count: number;
}

export interface BotStatusSource {
  /** Read at scrape time; every status the host knows is listed, with 0 where no bot has it. */
  statusCounts(): Promise<BotStatusCount[]>;
}

export const BotStatusKey = serviceKey<BotStatusSource>('metrics.bot_status');

/** The external agent runtimes' bots (host: the runtime's id), provided by the runtimes module beside the built-in host's. */
export const ExternalBotStatusKey = serviceKey<BotStatusSource>('metrics.external_bot_status');

/** Several hosts' counts as one source (absent ones left out); undefined when none is there. */
export function combineBotStatus(...sources: ReadonlyArray<BotStatusSource | undefined>): BotStatusSource | undefined {
  const present = sources.filter((s): s is BotStatusSource => s !== undefined);
  if (present.length === 0) return undefined;
  if (present.length === 1) return present[0];
  return { statusCounts: async () => (await Promise.all(present.map((s) => s.statusCounts()))).flat() };
}
