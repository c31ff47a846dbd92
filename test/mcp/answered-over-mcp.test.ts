/**
 * "Answered over MCP" is recorded on the row (issue 18 §5): the answering tools send the MCP
 * client's own name as `by` and `mcp` as `via`, which the escalation and check-in rows keep.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { silentLogger } from '../../src/core/index.js';
import { createMcpFace } from '../../src/mcp/server.js';

it('the answering tools tell the daemon who answered and that it was over MCP', async () => {
  const calls: { method: string; params: unknown }[] = [];
  const face = createMcpFace({
    call: async (method: string, params: unknown) => {
      calls.push({ method, params });
      return {};
    },
    subscribe: () => () => {},
    allowAnswers: true,
    version: '0.0.0',
    log: silentLogger,
  } as Parameters<typeof createMcpFace>[0]);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await face.server.connect(serverSide);
  const client = new Client({ name: 'Claude Desktop', version: '1.0.0' });
  await client.connect(clientSide);
  try {
    await client.callTool({ name: 'escalation_answer', arguments: { id: 'esc-1', approve: true } });
    await client.callTool({ name: 'escalation_answer', arguments: { id: 'esc-2', approve: false } });
    await client.callTool({ name: 'checkin_answer', arguments: { id: 'ci-1', resolution: 'answered' } });
    expect(calls).toEqual([
      { method: 'subconscious.escalations_approve', params: { id: 'esc-1', by: 'Claude Desktop', via: 'mcp' } },
      { method: 'subconscious.escalations_dismiss', params: { id: 'esc-2', by: 'Claude Desktop', via: 'mcp' } },
      { method: 'bots.resolve_checkin', params: { id: 'ci-1', resolution: 'answered', by: 'Claude Desktop', via: 'mcp' } },
    ]);
  } finally {
    await client.close();
    face.close();
  }
});
