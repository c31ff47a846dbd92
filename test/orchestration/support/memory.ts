/**
 * A small in-process memory store with the shape of the real one (issue 13): documents keyed by
 * (namespace, external id) — storing again updates in place — and a ranked full-text recall with
 * snippets (term frequency × inverse document frequency). It really searches and really stores, so
 * live-mode tests prove retrieval and eviction end to end without the memory module.
 */
import type { EvictionSink, MemoryDocumentInput, RecallHit, RecallQuery, Retriever } from '../../../src/orchestration/index.js';

interface Doc extends MemoryDocumentInput {
  version: number;
}

const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]{3,}/g) ?? [];

export class InProcessMemory implements Retriever, EvictionSink {
  private readonly docs = new Map<string, Doc>();
  /** Every `store` call, in order. */
  readonly writes: MemoryDocumentInput[] = [];
  /** Every `recall` call, in order. */
  readonly queries: RecallQuery[] = [];
  /** When set, `recall` throws it (memory down). */
  failRecall: Error | undefined;
  /** When set, `store` throws it (memory down). */
  failStore: Error | undefined;

  async store(doc: MemoryDocumentInput): Promise<void> {
    if (this.failStore) throw this.failStore;
    this.writes.push(doc);
    const key = `${doc.namespace}\u0000${doc.external_id}`;
    const before = this.docs.get(key);
    this.docs.set(key, { ...doc, metadata: { ...doc.metadata }, version: (before?.version ?? 0) + 1 });
  }

  async recall(q: RecallQuery): Promise<RecallHit[]> {
    this.queries.push(q);
    if (this.failRecall) throw this.failRecall;
    const terms = [...new Set(words(q.query))];
    const pool = [...this.docs.values()].filter((d) => q.namespace === undefined || d.namespace === q.namespace);
    const df = new Map(terms.map((t) => [t, pool.filter((d) => words(`${d.title} ${d.body}`).includes(t)).length]));
    const hits = pool
      .map((d) => {
        const bag = words(`${d.title} ${d.body}`);
        let score = 0;
        for (const t of terms) {
          const tf = bag.filter((w) => w === t).length;
          if (tf) score += (1 + Math.log(tf)) * Math.log(1 + pool.length / (df.get(t) ?? 1));
        }
        return { d, score };
      })
      .filter((h) => h.score > 0)
      .sort((a, b) => b.score - a.score || a.d.external_id.localeCompare(b.d.external_id))
      .slice(0, q.limit);
    return hits.map(({ d, score }) => ({ namespace: d.namespace, external_id: d.external_id, title: d.title, snippet: snippet(d.body, terms), score }));
  }

  get(namespace: string, externalId: string): MemoryDocumentInput | undefined {
    return this.docs.get(`${namespace}\u0000${externalId}`);
  }

  count(namespace?: string): number {
    return [...this.docs.values()].filter((d) => namespace === undefined || d.namespace === namespace).length;
  }
}

function snippet(body: string, terms: string[]): string {
  const lower = body.toLowerCase();
  const at = Math.min(...terms.map((t) => lower.indexOf(t)).filter((i) => i >= 0), body.length);
  const start = Math.max(0, at - 40);
  return `${start > 0 ? '…' : ''}${body.slice(start, start + 160)}${start + 160 < body.length ? '…' : ''}`;
}
