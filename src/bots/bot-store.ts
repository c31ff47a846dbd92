/**
 * Bots: create, read, update, delete. A bot's `name` is its @mention handle (unique); its
 * `model` is a role (`agent`, `local`), `role:model`, or a model on the agent endpoint; its
 * `tools` name the MCP servers it may use.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError, type Clock, type IdGen } from '../core/index.js';
import type { Bot } from '../protocol/bots.js';
import { toBot } from './rows.js';
import type { BotsTables } from './tables.js';

export interface BotInput {
  name: string;
  label?: string | undefined;
  description?: string | undefined;
  persona?: string | undefined;
  model?: string | undefined;
  tools?: string[] | undefined;
}

export type BotPatch = { [K in keyof BotInput]?: BotInput[K] | undefined };

/** `agent` | `local` | `agent:<model>` | `local:<model>` | `<model>` (on the agent endpoint). */
export function parseModelSpec(spec: string): { model_role: 'agent' | 'local'; model: string | null } {
  const s = spec.trim();
  if (s === 'agent' || s === 'local') return { model_role: s, model: null };
  for (const role of ['agent', 'local'] as const) {
    if (s.startsWith(`${role}:`)) {
      const model = s.slice(role.length + 1).trim();
      if (!model)
        throw new SubconsciousError('invalid_params', `model: "${s}" names no model after "${role}:"`, {
          hint: `Give "${role}" alone, or "${role}:<model>".`,
          details: { field: 'model' },
        });
      return { model_role: role, model };
    }
  }
  return { model_role: 'agent', model: s };
}

export interface BotStoreOptions {
  db: Kysely<BotsTables>;
  clock: Clock;
  ids: IdGen;
  /** The configured MCP servers; when given, a bot's tools must name some of them. */
  knownServers?: (() => readonly string[] | Promise<readonly string[]>) | undefined;
}

export class BotStore {
  constructor(private readonly o: BotStoreOptions) {}

  async list(): Promise<Bot[]> {
    const rows = await this.o.db.selectFrom('bots_bots').selectAll().orderBy('name').execute();
    return rows.map(toBot);
  }

  /** Every bot's id (no other column: the metrics scrape reads it). */
  async ids(): Promise<string[]> {
    const rows = await this.o.db.selectFrom('bots_bots').select('id').execute();
    return rows.map((r) => r.id);
  }

  async count(): Promise<number> {
    const row = await this.o.db
      .selectFrom('bots_bots')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async get(id: string): Promise<Bot | undefined> {
    const row = await this.o.db.selectFrom('bots_bots').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toBot(row) : undefined;
  }

  async require(id: string): Promise<Bot> {
    const bot = await this.get(id);
    if (!bot) throw new SubconsciousError('not_found', `No bot with id "${id}".`, { hint: 'List bots with bots.list (`subconscious bots list`).' });
    return bot;
  }

  async byName(name: string): Promise<Bot | undefined> {
    const row = await this.o.db.selectFrom('bots_bots').selectAll().where('name', '=', name.toLowerCase()).executeTakeFirst();
    return row ? toBot(row) : undefined;
  }

  /** The bots that exist, in the order of `ids`. */
  async byIds(ids: readonly string[]): Promise<Bot[]> {
    if (ids.length === 0) return [];
    const rows = await this.o.db
      .selectFrom('bots_bots')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, toBot(r)]));
    return [...new Set(ids)].map((id) => byId.get(id)).filter((b): b is Bot => b !== undefined);
  }

  /** Which of these ids are bots: the primary key alone, no row read beyond its index. */
  async existing(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.o.db
      .selectFrom('bots_bots')
      .select('id')
      .where('id', 'in', [...ids])
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  async create(input: BotInput): Promise<Bot> {
    const now = this.o.clock.now();
    await this.assertNameFree(input.name);
    const model = parseModelSpec(input.model ?? 'agent');
    const row = {
      id: this.o.ids(),
      name: input.name,
      label: input.label ?? input.name,
      description: input.description ?? '',
      persona: input.persona ?? '',
      model_role: model.model_role,
      model: model.model,
      tools: JSON.stringify(await this.checkTools(input.tools ?? [])),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.o.db.insertInto('bots_bots').values(row).execute();
    } catch (err) {
      // Two creates of one name at once: the unique index decides.
      if (await this.byName(input.name)) throw this.nameTaken(input.name);
      throw err;
    }
    return toBot(row);
  }

  async update(id: string, patch: BotPatch): Promise<Bot> {
    const bot = await this.require(id);
    if (patch.name !== undefined && patch.name !== bot.name) await this.assertNameFree(patch.name);
    const set: Record<string, unknown> = { updated_at: this.o.clock.now() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.label !== undefined) set.label = patch.label;
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.persona !== undefined) set.persona = patch.persona;
    if (patch.model !== undefined) Object.assign(set, parseModelSpec(patch.model));
    if (patch.tools !== undefined) set.tools = JSON.stringify(await this.checkTools(patch.tools));
    try {
      await this.o.db.updateTable('bots_bots').set(set).where('id', '=', id).execute();
    } catch (err) {
      if (patch.name !== undefined && (await this.byName(patch.name))?.id !== id) throw this.nameTaken(patch.name);
      throw err;
    }
    return this.require(id);
  }

  /** Deletes the bot and (by cascade) its direct thread, tasks, routines, approvals and notes. */
  async delete(id: string): Promise<void> {
    await this.o.db.deleteFrom('bots_bots').where('id', '=', id).execute();
  }

  private async assertNameFree(name: string): Promise<void> {
    if (await this.byName(name)) throw this.nameTaken(name);
  }

  private nameTaken(name: string): SubconsciousError {
    return new SubconsciousError('conflict', `name: a bot named "${name}" already exists; names are @mention handles and must be unique.`, {
      hint: 'Choose another name (the label may repeat).',
      details: { field: 'name' },
    });
  }

  private async checkTools(tools: readonly string[]): Promise<string[]> {
    const unique = [...new Set(tools.map((t) => t.trim()))];
    const known = await this.o.knownServers?.();
    if (known) {
      const unknown = unique.filter((t) => !known.includes(t));
      if (unknown.length > 0) {
        throw new SubconsciousError(
          'invalid_params',
          `tools: ${unknown.map((t) => `"${t}"`).join(', ')} ${unknown.length === 1 ? 'is not a' : 'are not'} configured MCP server${unknown.length === 1 ? '' : 's'}`,
          {
            hint: known.length ? `Configured servers: ${known.join(', ')}.` : 'No MCP servers are configured: add them under [mcp] in subconscious.toml.',
            details: { field: 'tools' },
          },
        );
      }
    }
    return unique;
  }
}
