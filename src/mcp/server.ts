/**
 * The MCP face (`subconscious mcp` on stdio, `/mcp` on the daemon): what a person does on the
 * page, as MCP tools, and the activity log, actionables and directives as resources whose
 * changes are notified from the engine's events. Built on the RPC contract only, so the same
 * server runs in the daemon (its dispatcher) and in `subconscious mcp` (the daemon over HTTP, or
 * the store opened in that process).
 *
 * Answering an escalation or a check-in acts for the person: the tools that do are listed only
 * when `[server] mcp_allow_answers = true`, and each answer is logged as given over MCP.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Logger } from '../core/index.js';
import { ACTIONABLE_STATES, ESCALATION_STATUSES, createRpcClient, type ProductMethods, type Transport } from '../protocol/index.js';

export interface McpFaceDeps {
  call: Transport;
  /** The engine's events (for resource change notifications); returns "stop". */
  subscribe(listener: (event: { type: string }) => void): () => void;
  /** `[server] mcp_allow_answers`: offer the tools that answer escalations and check-ins. */
  allowAnswers: boolean;
  version: string;
  log: Logger;
}

/** The resources, and the events after which each one reads differently. */
export const MCP_RESOURCES = {
  'subconscious://log': { name: 'activity-log', title: 'Activity log', events: ['tasks.log_changed'], method: 'subconscious.log_list' },
  'subconscious://actionables': { name: 'actionables', title: 'Actionables', events: ['conscious.actionables_changed'], method: 'conscious.list' },
  'subconscious://directives': {
    name: 'directives',
    title: 'Steering directives',
    events: ['steering.directive', 'steering.reviewed'],
    method: 'steering.current',
  },
} as const;

const text = (value: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(value, null, 2) }] });

/** One MCP server (one per session: the SDK binds a server to one transport). */
export function createMcpFace(deps: McpFaceDeps): { server: McpServer; close(): void } {
  const call = createRpcClient<ProductMethods>(deps.call);
  const server = new McpServer({ name: 'subconscious', version: deps.version }, { capabilities: { resources: { subscribe: true, listChanged: false } } });
  const tool = <S extends z.ZodRawShape>(
    name: string,
    description: string,
    shape: S,
    readOnly: boolean,
    run: (args: z.infer<z.ZodObject<S>>) => Promise<unknown>,
  ) =>
    server.registerTool(name, { description, inputSchema: shape, annotations: { readOnlyHint: readOnly, openWorldHint: false } }, (async (
      args: z.infer<z.ZodObject<S>>,
    ) => {
      try {
        return text(await run(args));
      } catch (err) {
        return { isError: true, content: [{ type: 'text' as const, text: err instanceof Error ? err.message : String(err) }] };
      }
    }) as never);

  tool('status', 'The worlds, their last ticks and whether the models answer.', {}, true, () => call('subconscious.status'));
  tool('tasks_list', 'List the standing tasks (id, title, schedule, on/off, why it runs next).', {}, true, () => call('subconscious.tasks_list'));
  tool(
    'tasks_add',
    'Add a standing task the tasks world checks at each tick, e.g. "check urgent emails". It is read-only: write rights are given on the page.',
    { title: z.string().min(1).max(500), recurrence: z.string().optional().describe('pending (default), once, or cron:<expr>') },
    false,
    ({ title, recurrence }) => call('subconscious.tasks_add', { title, ...(recurrence ? { recurrence } : {}) }),
  );
  tool(
    'tasks_pause',
    'Pause (or resume with paused=false) a task by id.',
    { id: z.string().min(1), paused: z.boolean().default(true) },
    false,
    ({ id, paused }) => call('subconscious.tasks_update', { task_id: id, enabled: !paused }),
  );
  tool(
    'escalations_list',
    'Escalations: writes the tasks world wants the person to approve. Pending first.',
    { status: z.enum(ESCALATION_STATUSES).optional() },
    true,
    ({ status }) => call('subconscious.escalations_list', status ? { status } : {}),
  );
  tool(
    'checkins_list',
    'Check-ins: questions the heartbeat asks the person about unfinished bot work.',
    {},
    true,
    async () => (await call('bots.heartbeat_snapshot')).checkins,
  );
  tool('actionables_list', 'Actionable items the conscious loop extracted from memory.', { state: z.enum(ACTIONABLE_STATES).optional() }, true, ({ state }) =>
    call('conscious.list', state ? { state } : {}),
  );
  tool('directives_current', 'The steering directives in force for the orchestration loop.', {}, true, () => call('steering.current'));
  tool(
    'memory_search',
    'Full-text search of memory (documents from the connected sources).',
    { query: z.string().min(1).max(500), limit: z.number().int().min(1).max(50).optional() },
    true,
    ({ query, limit }) => call('memory.recall', { query, ...(limit ? { limit } : {}) }),
  );
  tool(
    'bot_send_message',
    "Send a message to a bot's direct thread. Give an idempotency_key (1–200 characters, yours) to make a retry safe: a repeat with it returns the first send's result.",
    { bot_id: z.string().min(1), text: z.string().min(1).max(20_000), idempotency_key: z.string().min(1).max(200).optional() },
    false,
    ({ bot_id, text: message, idempotency_key }) =>
      call('bots.send_message', { bot_id, text: message, ...(idempotency_key !== undefined ? { idempotency_key } : {}) }),
  );
  if (deps.allowAnswers) {
    // The stored row says who answered and through which door: the MCP client's own name, over MCP.
    const who = () => ({ by: server.server.getClientVersion()?.name?.trim().slice(0, 80) || 'an MCP client', via: 'mcp' as const });
    tool(
      'escalation_answer',
      'Answer an escalation for the person: approve (runs its action once) or dismiss.',
      { id: z.string().min(1), approve: z.boolean() },
      false,
      async ({ id, approve }) => {
        deps.log.info({ escalation_id: id, approve, via: 'mcp' }, 'escalation answered over MCP');
        return approve ? call('subconscious.escalations_approve', { id, ...who() }) : call('subconscious.escalations_dismiss', { id, ...who() });
      },
    );
    tool(
      'checkin_answer',
      'Answer a check-in for the person: answered, dismissed, or retry.',
      { id: z.string().min(1), resolution: z.enum(['answered', 'dismissed', 'retry']) },
      false,
      async ({ id, resolution }) => {
        deps.log.info({ checkin_id: id, resolution, via: 'mcp' }, 'check-in answered over MCP');
        return call('bots.resolve_checkin', { id, resolution, ...who() });
      },
    );
  }

  for (const [uri, r] of Object.entries(MCP_RESOURCES)) {
    server.registerResource(r.name, uri, { title: r.title, mimeType: 'application/json' }, async () => ({
      contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(await deps.call(r.method, {}), null, 2) }],
    }));
  }
  const subscribed = new Set<string>();
  server.server.setRequestHandler(SubscribeRequestSchema, (request) => {
    subscribed.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscribed.delete(request.params.uri);
    return {};
  });
  const stop = deps.subscribe((event) => {
    for (const [uri, r] of Object.entries(MCP_RESOURCES)) {
      if (subscribed.has(uri) && (r.events as readonly string[]).includes(event.type)) void server.server.sendResourceUpdated({ uri }).catch(() => undefined);
    }
  });
  return {
    server,
    close: () => {
      stop();
      void server.close().catch(() => undefined);
    },
  };
}
