/**
 * Actionables in the world's own table. An extracted item is upserted by its deterministic id:
 * its content and `last_seen_at` are refreshed, its state never (a dismissed item stays
 * dismissed, a done one done). People change the state (and may undo it); nothing else does.
 * A dismissed item pruned after the retention keeps its id, so it never comes back as new.
 */
import type { Kysely } from 'kysely';
import { SubconsciousError } from '../../core/errors.js';
import {
  ACTIONABLE_PRIORITIES,
  CONSCIOUS_NAMESPACE,
  type Actionable,
  type ActionablePriority,
  type ActionableSource,
  type ActionableState,
} from '../../protocol/conscious.js';
import type { ExtractedActionable } from './schema.js';
import type { ConsciousActionablesTable, ConsciousTables } from './tables.js';

const rank = (p: ActionablePriority) => ACTIONABLE_PRIORITIES.indexOf(p);

export class ActionableStore {
  constructor(private readonly db: Kysely<ConsciousTables>) {}

  /** Upsert one run's items in one transaction; returns the ids that were new. */
  async upsert(items: readonly ExtractedActionable[], runId: string, now: number): Promise<string[]> {
    if (items.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const ids = items.map((i) => i.id);
      const existing = new Set((await trx.selectFrom('conscious_actionables').select('id').where('id', 'in', ids).execute()).map((r) => r.id));
      // A dismissed item pruned since comes back dismissed, as the person left it.
      const dismissed = new Map(
        (await trx.selectFrom('conscious_dismissed').select(['id', 'dismissed_at']).where('id', 'in', ids).execute()).map((r) => [
          r.id,
          Number(r.dismissed_at),
        ]),
      );
      for (const item of items) {
        const content = {
          title: item.title,
          description: item.description,
          source: item.source,
          priority: item.priority,
          priority_rank: rank(item.priority),
          actionable: item.actionable ? 1 : 0,
          requires_confirmation: item.requires_confirmation ? 1 : 0,
          has_complex_action: item.has_complex_action ? 1 : 0,
          source_label: item.source_label,
          updated_at: now,
          last_seen_at: now,
          run_id: runId,
          // A run that found no source document for it keeps the one an earlier run found.
          ...(item.source_document
            ? {
                source_namespace: item.source_document.namespace,
                source_external_id: item.source_document.external_id,
                source_title: item.source_document.title,
              }
            : {}),
        };
        await trx
          .insertInto('conscious_actionables')
          .values({
            id: item.id,
            ...content,
            state: dismissed.has(item.id) ? 'dismissed' : 'new',
            state_changed_at: dismissed.get(item.id) ?? null,
            created_at: now,
          })
          .onConflict((oc) => oc.column('id').doUpdateSet(content))
          .execute();
      }
      if (dismissed.size)
        await trx
          .deleteFrom('conscious_dismissed')
          .where('id', 'in', [...dismissed.keys()])
          .execute();
      return items.filter((i) => !existing.has(i.id) && !dismissed.has(i.id)).map((i) => i.id);
    });
  }

  /** Most urgent first, then most recently seen. */
  async list(opts: { state?: ActionableState | undefined; limit?: number | undefined } = {}): Promise<Actionable[]> {
    const rows = await this.db
      .selectFrom('conscious_actionables')
      .selectAll()
      .$if(opts.state !== undefined, (q) => q.where('state', '=', opts.state!))
      .orderBy('priority_rank')
      .orderBy('last_seen_at', 'desc')
      .orderBy('id')
      .limit(opts.limit ?? 200)
      .execute();
    return rows.map(toActionable);
  }

  /** Every stored item's id and title (what a reworded item is matched against). */
  async titles(): Promise<{ id: string; title: string }[]> {
    return this.db.selectFrom('conscious_actionables').select(['id', 'title']).orderBy('created_at').orderBy('id').execute();
  }

  async getMany(ids: readonly string[]): Promise<Actionable[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('conscious_actionables')
      .selectAll()
      .where('id', 'in', [...ids])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, toActionable(r)]));
    return ids.map((id) => byId.get(id)).filter((a): a is Actionable => a !== undefined);
  }

  async get(id: string): Promise<Actionable | undefined> {
    const row = await this.db.selectFrom('conscious_actionables').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toActionable(row) : undefined;
  }

  /** A person's choice: done, dismissed, or new again (undo). */
  async setState(id: string, state: ActionableState, now: number): Promise<Actionable> {
    const res = await this.db.updateTable('conscious_actionables').set({ state, state_changed_at: now }).where('id', '=', id).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) {
      throw new SubconsciousError('not_found', `No actionable "${id}".`, { hint: 'conscious.list shows the actionables and their ids.' });
    }
    return (await this.get(id))!;
  }

  /**
   * Delete done or dismissed items no run extracted since `before`. A dismissed one leaves its id
   * behind (`conscious_dismissed`), so it stays dismissed when a later run extracts it again.
   * Returns the ids deleted (their memory documents go too).
   */
  async prune(before: number): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('conscious_dismissed')
        .columns(['id', 'dismissed_at'])
        .expression(
          trx
            .selectFrom('conscious_actionables')
            .select((eb) => ['id', eb.fn.coalesce('state_changed_at', 'last_seen_at').as('dismissed_at')])
            .where('state', '=', 'dismissed')
            .where('last_seen_at', '<', before),
        )
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      const gone = await trx.selectFrom('conscious_actionables').select('id').where('state', '!=', 'new').where('last_seen_at', '<', before).execute();
      if (gone.length === 0) return [];
      const ids = gone.map((r) => r.id);
      await trx.deleteFrom('conscious_actionables').where('id', 'in', ids).execute();
      return ids;
    });
  }
}

function toActionable(r: ConsciousActionablesTable): Actionable {
  return {
    id: r.id,
    title: r.title,
    description: r.description,
    source: r.source as ActionableSource,
    priority: r.priority as ActionablePriority,
    actionable: r.actionable === 1,
    requires_confirmation: r.requires_confirmation === 1,
    has_complex_action: r.has_complex_action === 1,
    source_label: r.source_label,
    state: r.state as ActionableState,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    last_seen_at: Number(r.last_seen_at),
    run_id: r.run_id,
    memory: { namespace: CONSCIOUS_NAMESPACE, external_id: r.id },
    source_document:
      r.source_namespace && r.source_external_id ? { namespace: r.source_namespace, external_id: r.source_external_id, title: r.source_title ?? '' } : null,
  };
}
