/**
 * One `BotsHeartbeatApi` over several hosts (issue 18 §6): the built-in bots host and the hosts
 * of external agent runtimes, each owning its bots and everything of theirs by id. The heartbeat
 * is given the routed API and cannot tell them apart: a call about one bot, thread, task or
 * message goes to the host that owns the id; a store-wide read asks every host and merges; a
 * listener is registered with every host.
 *
 * The built-in host owns every id no other host claims, so it needs no `owns` of its own.
 */
import { triageWorkOf, type BotsHeartbeatApi } from './host.js';

/** A host beside the built-in one: the heartbeat's API, plus which ids are its own (bots, threads, tasks, messages). */
export interface ExternalHeartbeatHost extends BotsHeartbeatApi {
  /** Synchronous and pure (a prefix): single-flight asks it on every check. */
  owns(id: string): boolean;
}

/** The built-in host with the external hosts beside it; with none, the built-in host itself. */
export function routeHeartbeatHosts(builtin: BotsHeartbeatApi, externals: readonly ExternalHeartbeatHost[]): BotsHeartbeatApi {
  if (externals.length === 0) return builtin;
  const all: BotsHeartbeatApi[] = [builtin, ...externals];
  const of = (id: string): BotsHeartbeatApi => externals.find((h) => h.owns(id)) ?? builtin;
  /** Ids split by their host, in the order the hosts are listed; hosts with none are left out. */
  const split = (ids: readonly string[]): Array<[BotsHeartbeatApi, string[]]> => {
    const groups = new Map<BotsHeartbeatApi, string[]>();
    for (const id of ids) {
      const host = of(id);
      const list = groups.get(host) ?? [];
      list.push(id);
      groups.set(host, list);
    }
    return all.filter((h) => groups.has(h)).map((h) => [h, groups.get(h)!]);
  };
  const perIds = async <T>(ids: readonly string[], read: (host: BotsHeartbeatApi, ids: string[]) => Promise<T[]>): Promise<T[]> =>
    (await Promise.all(split(ids).map(([h, part]) => read(h, part)))).flat();
  const perIdsMap = async <V>(ids: readonly string[], read: (host: BotsHeartbeatApi, ids: string[]) => Promise<Map<string, V>>): Promise<Map<string, V>> => {
    const out = new Map<string, V>();
    for (const m of await Promise.all(split(ids).map(([h, part]) => read(h, part)))) for (const [k, v] of m) out.set(k, v);
    return out;
  };
  const everywhere = async <T>(read: (host: BotsHeartbeatApi) => Promise<T[]>): Promise<T[]> => (await Promise.all(all.map(read))).flat();
  const onAll = (register: (host: BotsHeartbeatApi) => () => void): (() => void) => {
    const offs = all.map(register);
    return () => {
      for (const off of offs) off();
    };
  };
  /** Newest first across hosts, as each host sorts its own (`updated_at` descending), then cut to the limit. */
  const newestFirst = <T extends { updated_at: number }>(rows: T[], limit: number | undefined): T[] => {
    const sorted = rows.sort((a, b) => b.updated_at - a.updated_at);
    return limit === undefined ? sorted : sorted.slice(0, limit);
  };

  return {
    dispatchToBot: (botId, threadId, text, options) => of(botId).dispatchToBot(botId, threadId, text, options),
    isIdle: (botId) => of(botId).isIdle(botId),
    statusOf: (botId) => of(botId).statusOf(botId),
    beginPulse: (botId, controller) => of(botId).beginPulse(botId, controller),
    isChecking: (botId) => of(botId).isChecking(botId),
    getTask: (taskId) => of(taskId).getTask(taskId),
    openWork: async (opts = {}) =>
      opts.botIds ? perIds(opts.botIds, (h, botIds) => h.openWork({ ...opts, botIds })) : newestFirst(await everywhere((h) => h.openWork(opts)), opts.limit),
    claimTask: (taskId, claim) => of(taskId).claimTask(taskId, claim),
    renewClaim: (taskId, token) => of(taskId).renewClaim(taskId, token),
    releaseClaim: (taskId, opts) => of(taskId).releaseClaim(taskId, opts),
    staleClaims: (staleMs) => everywhere((h) => h.staleClaims(staleMs)),
    resetAttempts: (taskId) => of(taskId).resetAttempts(taskId),
    markExhausted: (taskId) => of(taskId).markExhausted(taskId),
    directThread: (botId) => of(botId).directThread(botId),
    messages: (threadId, opts) => of(threadId).messages(threadId, opts),
    userActivity: (threadId) => of(threadId).userActivity(threadId),
    markUserActive: (threadId) => of(threadId).markUserActive(threadId),
    expiredApprovals: (botId, since) => of(botId).expiredApprovals(botId, since),
    postSystemNote: (threadId, text, opts) => of(threadId).postSystemNote(threadId, text, opts),
    postBotMessage: (botId, threadId, text, opts) => of(botId).postBotMessage(botId, threadId, text, opts),
    onSettled: (l) => onAll((h) => h.onSettled(l)),
    onControlLines: (l) => onAll((h) => h.onControlLines(l)),
    onJobDropped: (l) => onAll((h) => h.onJobDropped(l)),
    addPersonaSection: (s) => onAll((h) => h.addPersonaSection(s)),
    registerAttention: (s) => onAll((h) => h.registerAttention(s)),
    onHumanAction: (l) => onAll((h) => h.onHumanAction(l)),
    bots: (ids) => perIds(ids, (h, part) => h.bots(part)),
    existingBots: async (ids) => new Set(await perIds(ids, async (h, part) => [...(await h.existingBots(part))])),
    countBots: async () => (await Promise.all(all.map((h) => h.countBots()))).reduce((n, c) => n + c, 0),
    triageWork: async (opts) => {
      const parts = await Promise.all(split(opts.botIds).map(([h, botIds]) => triageWorkOf(h, { ...opts, botIds })));
      return { tasks: parts.flatMap((p) => p.tasks), orphanIds: new Set(parts.flatMap((p) => [...p.orphanIds])) };
    },
    orphans: async (opts = {}) => (opts.botIds ? perIds(opts.botIds, (h, botIds) => h.orphans({ ...opts, botIds })) : everywhere((h) => h.orphans(opts))),
    staleMessages: (opts) => everywhere((h) => h.staleMessages(opts)),
    leftovers: async (opts) => {
      const each = await Promise.all(all.map((h) => h.leftovers(opts)));
      return {
        claims: each.some((l) => l.claims),
        open: each.some((l) => l.open),
        streaming: each.some((l) => l.streaming),
        routines: each.some((l) => l.routines !== false), // a host that cannot tell: maybe
      };
    },
    fireDueRoutines: () => everywhere((h) => h.fireDueRoutines()),
    reconcileMessage: (messageId, olderThanMs) => of(messageId).reconcileMessage(messageId, olderThanMs),
    repairOrphan: (taskId, olderThanMs) => of(taskId).repairOrphan(taskId, olderThanMs),
    thread: (id) => of(id).thread(id),
    recentMessages: (threadIds, limit) => perIdsMap(threadIds, (h, part) => h.recentMessages(part, limit)),
    triageMessages: (threads, limit) => {
      const botOf = new Map(threads.map((t) => [t.threadId, t.botId]));
      return perIdsMap(
        threads.map((t) => t.threadId),
        (h, part) =>
          h.triageMessages(
            part.map((threadId) => ({ threadId, botId: botOf.get(threadId)! })),
            limit,
          ),
      );
    },
    userActivities: (threadIds) => perIdsMap(threadIds, (h, part) => h.userActivities(part)),
    expiredApprovalsOf: (botIds, since) => perIds(botIds, (h, part) => h.expiredApprovalsOf(part, since)),
    pendingApprovalsOf: (threadIds) => perIdsMap(threadIds, (h, part) => h.pendingApprovalsOf(part)),
  };
}
