/**
 * The harness's service keys (core/services.ts).
 *
 *   HarnessKey           the harness itself: the orchestration module provides it; the steering
 *                        world reads its history through it.
 *   SubconsciousLayerKey the harness's subconscious layer: the steering world's directives and its
 *                        "review now". The steering module provides it; it starts after the
 *                        harness, so the harness looks it up at cycle time (late binding: the two
 *                        folders never import each other's code, only these keys).
 *   HarnessMemoryKey,    the memory store and the agent runner, seen through the small interfaces
 *   HarnessAgentKey      the harness needs (types.ts). They name the same services as
 *                        `MemoryStoreKey` (src/memory) and `AgentRunnerKey` (src/agent) — the layer
 *                        rules keep orchestration/ from importing either folder; a test pins the
 *                        ids and checks that the real services fit these interfaces.
 */
import { serviceKey } from '../core/services.js';
import type { GateReason } from '../protocol/orchestration.js';
import type { HarnessService } from './service.js';
import type { ReasoningAgent, RecallHit, RecallQuery, SteeringSource } from './types.js';

export const HarnessKey = serviceKey<HarnessService>('orchestration.harness');

/** What the harness asks of its subconscious layer. */
export interface SubconsciousLayer extends SteeringSource {
  /** A forwarded cycle committed: review the history now (must not block; the review runs in the background). */
  requestReview(req: { cycle_id: string; seq: number; reasons: GateReason[] }): void;
}

export const SubconsciousLayerKey = serviceKey<SubconsciousLayer>('orchestration.subconscious');

/** The memory store as the harness uses it: recall for retrieval, documents for eviction. */
export interface HarnessMemory {
  recall(query: RecallQuery): Promise<RecallHit[]>;
  storeDocument(
    doc: {
      namespace: string;
      external_id: string;
      title: string;
      body: string;
      metadata?: Record<string, unknown> | undefined;
      source_kind?: string | undefined;
    },
    info?: { label?: string | undefined; kind?: string | undefined },
  ): Promise<unknown>;
}

/** `MemoryStoreKey`'s id (src/memory/services.ts). */
export const HarnessMemoryKey = serviceKey<HarnessMemory>('memory.store');
/** `AgentRunnerKey`'s id (src/agent/services.ts). */
export const HarnessAgentKey = serviceKey<ReasoningAgent>('agent.runner');
