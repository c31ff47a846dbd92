/**
 * OpenAPI 3.1 of the daemon, built from the contracts it serves: each method's params from its
 * zod schema (`z.toJSONSchema`), its result and every event payload from the JSON Schemas that
 * `devtools/protocol-schemas.ts` reads off the TypeScript types at build time.
 *
 * JSON-RPC has one URL, so each method is a path of its own, `/rpc#<method>`: a `POST /rpc`
 * whose body's `method` is that name. Events are `components.schemas.Event_<type>`, and
 * `GET /events` answers one of them per SSE message. The webhook the daemon posts to an external
 * agent runtime is `webhooks['runtime.dispatch']`.
 */
import { z } from 'zod';
import { WEBHOOK_ATTEMPT_HEADER, WEBHOOK_EVENT_HEADER, WEBHOOK_IDEMPOTENCY_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TOLERANCE_SECONDS } from './runtimes.js';

type Schema = Record<string, unknown>;

/** What the build writes to `dist/protocol/schemas.json`. */
export interface ProtocolSchemas {
  results: Record<string, Schema>;
  events: Record<string, Schema>;
  components: Record<string, Schema>;
  /** The bodies the daemon posts to others (an external runtime's webhook), by name. */
  webhooks?: Record<string, Schema>;
}

export interface OpenApiInput {
  version: string;
  methods: ReadonlyArray<{ name: string; description: string; params: z.ZodType }>;
  events: readonly string[];
  /** Null when the build did not write them (running from the sources): results and payloads are then undescribed. */
  schemas: ProtocolSchemas | null;
}

/** `SubconsciousError` codes (src/core/errors.ts lists what each means): `error.data.code` of an RPC error. */
export const ERROR_CODES = [
  'config_invalid',
  'store_unavailable',
  'recall_failed',
  'invalid_params',
  'not_found',
  'conflict',
  'forbidden',
  'world_off',
  'model_unreachable',
  'model_timeout',
  'model_rate_limit',
  'model_rate_cap',
  'model_no_tools',
  'model_malformed',
  'model_error',
  'cancelled',
  'tick_timeout',
  'graph_invalid',
  'graph_step_limit',
  'mcp_unavailable',
  'over_budget',
] as const;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema, description: string) => ({ description, content: { 'application/json': { schema } } });

function paramsSchema(params: z.ZodType): Schema {
  const { $schema: _dropped, ...schema } = z.toJSONSchema(params, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Schema;
  return schema;
}

export function buildOpenApi(input: OpenApiInput): Schema {
  const results = input.schemas?.results ?? {};
  const payloads = input.schemas?.events ?? {};
  const undescribed = { description: 'Not described: this daemon runs from the sources (`npm run build` writes the result schemas).' };
  const schemas: Schema = {
    ...(input.schemas?.components ?? {}),
    RpcError: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: {
          type: 'integer',
          description: '-32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid params, -32000 application error, -32603 internal',
        },
        message: { type: 'string' },
        data: {
          type: 'object',
          properties: {
            code: { enum: [...ERROR_CODES], description: 'What went wrong, stable (src/core/errors.ts); switch on this.' },
            hint: { type: 'string', description: 'What to do about it.' },
            error_id: { type: 'string', description: 'An internal error: the daemon log line with the details has this id.' },
          },
        },
      },
    },
    HttpError: {
      type: 'object',
      required: ['error', 'message'],
      properties: { error: { type: 'string', description: '`unauthorized`, `forbidden_host`, `not_found`, `internal`' }, message: { type: 'string' } },
    },
  };
  const paths: Record<string, unknown> = {};
  for (const m of input.methods) {
    const id = m.name.replace(/[^A-Za-z0-9_]/g, '_');
    schemas[`Params_${id}`] = paramsSchema(m.params);
    paths[`/rpc#${m.name}`] = {
      post: {
        operationId: id,
        summary: m.name,
        description: m.description,
        tags: [m.name.split('.')[0]],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['jsonrpc', 'method', 'id'],
                properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'number'] }, method: { const: m.name }, params: ref(`Params_${id}`) },
              },
            },
          },
        },
        responses: {
          '200': json(
            {
              oneOf: [
                {
                  type: 'object',
                  required: ['jsonrpc', 'id', 'result'],
                  properties: { jsonrpc: { const: '2.0' }, id: {}, result: results[m.name] ?? undescribed },
                },
                { type: 'object', required: ['jsonrpc', 'id', 'error'], properties: { jsonrpc: { const: '2.0' }, id: {}, error: ref('RpcError') } },
              ],
            },
            'The result, or a JSON-RPC error whose `data.code` says what went wrong.',
          ),
          '401': json(ref('HttpError'), 'Missing or wrong bearer token.'),
          '403': json(ref('HttpError'), 'A foreign `Host` header.'),
          '413': json(ref('HttpError'), 'Request body too large.'),
        },
      },
    };
  }
  const events = input.events.map((type) => {
    const name = `Event_${type.replace(/[^A-Za-z0-9_]/g, '_')}`;
    schemas[name] = {
      type: 'object',
      required: ['type', 'at', 'data'],
      properties: { type: { const: type }, at: { type: 'number', description: 'Epoch ms.' }, data: payloads[type] ?? undescribed },
    };
    return ref(name);
  });
  paths['/events'] = {
    get: {
      operationId: 'events',
      summary: 'Events (SSE)',
      description:
        'Server-sent events: each message is one JSON event (`data:`), the first a `hello`. Send the bearer token (or `?token=`, for EventSource). ' +
        'On reconnect send `Last-Event-ID` with the last `id:` seen.',
      responses: {
        '200': { description: 'An event stream.', content: { 'text/event-stream': { schema: { oneOf: events } } } },
        '401': json(ref('HttpError'), 'Missing or wrong token.'),
      },
    },
  };
  paths['/healthz'] = {
    get: {
      operationId: 'healthz',
      summary: 'The process is up (with a token: its worlds, store and whether each model answers)',
      security: [],
      responses: { '200': json({ type: 'object' }, 'Up.') },
    },
  };
  paths['/readyz'] = {
    get: {
      operationId: 'readyz',
      summary: 'Ready to work: store, migrations, models',
      security: [],
      responses: { '200': json(ref('ReadyReport'), 'Every check passed.'), '503': json(ref('ReadyReport'), 'A check failed (see `checks`).') },
    },
  };
  schemas.ReadyReport = {
    type: 'object',
    required: ['ready', 'checks'],
    properties: {
      ready: { type: 'boolean' },
      checks: {
        type: 'object',
        additionalProperties: { type: 'object', required: ['ok', 'detail'], properties: { ok: { type: 'boolean' }, detail: { type: ['string', 'null'] } } },
      },
    },
  };
  const header = (name: string, description: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } });
  const webhooks = {
    'runtime.dispatch': {
      post: {
        operationId: 'runtime_dispatch',
        summary: 'A dispatch to your agent runtime (resume, ask, cancel)',
        description:
          'What the daemon posts to a runtime registered with `delivery: {kind: "webhook"}` (runtime.register). Check the signature over the raw body, ' +
          'dedupe on the idempotency key (the same on every delivery of one dispatch), answer 2xx at once, then `runtime.ack` it (a resume: its start, once). ' +
          'Any other answer, or none, is retried with exponential backoff; a delivery not acknowledged within `ack_seconds` is delivered again.',
        parameters: [
          header(
            WEBHOOK_SIGNATURE_HEADER,
            `\`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the runtime's secret>\`; refuse a timestamp more than ${WEBHOOK_TOLERANCE_SECONDS} s away.`,
          ),
          header(WEBHOOK_IDEMPOTENCY_HEADER, 'The dispatch id.'),
          header(WEBHOOK_ATTEMPT_HEADER, 'Which delivery of the dispatch this is (1, 2, …).'),
          header(WEBHOOK_EVENT_HEADER, '`dispatch.resume`, `dispatch.ask` or `dispatch.cancel`.'),
        ],
        requestBody: { required: true, content: { 'application/json': { schema: input.schemas?.webhooks?.['runtime.dispatch'] ?? undescribed } } },
        responses: {
          '200': { description: 'Received (any 2xx): not delivered again unless no `runtime.ack` comes within `ack_seconds`.' },
          default: { description: 'Anything else (a 401 for a bad signature, a 5xx, a timeout) is retried with backoff.' },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'subconscious daemon',
      version: input.version,
      description:
        'JSON-RPC 2.0 at `POST /rpc` (each method is listed as `/rpc#<method>`), events at `GET /events`. Every call needs `Authorization: Bearer <token>` ' +
        '(`<workspace>/.subconscious/token`).',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://127.0.0.1:7777' }],
    security: [{ bearer: [] }],
    paths,
    webhooks,
    components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  };
}
