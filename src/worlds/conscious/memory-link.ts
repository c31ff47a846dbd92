/**
 * Actionables in memory (seed 3, step 9): each one is a document in the `conscious` namespace
 * whose external id is the actionable's id (sha256 of title:source, so the document id is
 * deterministic), so memory search and other worlds (the memory world's diff) see them. The
 * document follows the item: written when a run extracts it, rewritten when a person marks it
 * done, dismisses or reopens it, deleted when retention prunes it. Its body holds only what a
 * reader needs (no `last_seen_at`), so a run that extracts the same item again changes nothing
 * in memory. One failed write is a warning: the run goes on with the others.
 */
import { describeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { CONSCIOUS_NAMESPACE, type Actionable } from '../../protocol/conscious.js';

export { CONSCIOUS_NAMESPACE };

/** What the link needs of the memory store (`MemoryStore` has it). */
export interface ConsciousMemoryWriter {
  storeDocument(
    input: { namespace: string; external_id: string; title: string; body: string; metadata?: Record<string, unknown>; source_kind?: string },
    info?: { label?: string; kind?: string },
  ): Promise<unknown>;
  deleteDocument(namespace: string, externalId: string): Promise<boolean>;
}

const NAMESPACE_INFO = { label: 'Conscious loop: actionables', kind: 'conscious' };

export function actionableDocument(a: Actionable) {
  return {
    namespace: CONSCIOUS_NAMESPACE,
    external_id: a.id,
    title: a.title,
    body: [
      a.description,
      '',
      `Priority: ${a.priority}`,
      `Source: ${a.source_label} (${a.source})`,
      a.source_document ? `From: ${a.source_document.title} (${a.source_document.namespace}/${a.source_document.external_id})` : null,
      `State: ${a.state}`,
      a.requires_confirmation ? 'Requires confirmation before acting.' : null,
      a.has_complex_action ? 'Needs several steps.' : null,
    ]
      .filter((l) => l !== null)
      .join('\n'),
    metadata: {
      kind: 'actionable',
      actionable_id: a.id,
      priority: a.priority,
      source: a.source,
      source_label: a.source_label,
      state: a.state,
      actionable: a.actionable,
      requires_confirmation: a.requires_confirmation,
      has_complex_action: a.has_complex_action,
      created_at: a.created_at,
      source_document: a.source_document,
    },
    source_kind: 'actionable',
  };
}

export class ActionableMemoryLink {
  constructor(
    private readonly memory: ConsciousMemoryWriter,
    private readonly log: Logger,
  ) {}

  /** Write each item's document; returns the ids whose write failed (each one warned). */
  async write(items: readonly Actionable[]): Promise<string[]> {
    const failed: string[] = [];
    for (const item of items) {
      try {
        await this.memory.storeDocument(actionableDocument(item), NAMESPACE_INFO);
      } catch (err) {
        failed.push(item.id);
        this.log.warn({ actionable: item.id, title: item.title, err: describeError(err) }, 'conscious: writing an actionable into memory failed; going on');
      }
    }
    return failed;
  }

  /** Remove the documents of pruned items (a failure is a warning). */
  async remove(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      try {
        await this.memory.deleteDocument(CONSCIOUS_NAMESPACE, id);
      } catch (err) {
        this.log.warn({ actionable: id, err: describeError(err) }, 'conscious: removing a pruned actionable from memory failed');
      }
    }
  }
}
