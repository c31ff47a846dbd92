import { agentContract, implement } from '../../src/protocol/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus, FakeClock, RpcDispatcher, sequentialIds, type BusEvent } from '../../src/core/index.js';
import { ApprovalStore, McpManager, agentRpcHandlers } from '../../src/agent/index.js';
import { openTestStore, type TestStore } from '../support/stores.js';
import { filesystemServer } from './harness.js';

describe('agent RPC methods', () => {
  let store: TestStore;
  let dir: string;
  let mcp: McpManager;
  let approvals: ApprovalStore;
  let rpc: RpcDispatcher;
  let events: BusEvent[];
  const clock = new FakeClock();

  beforeEach(async () => {
    store = await openTestStore('sqlite');
    dir = mkdtempSync(path.join(os.tmpdir(), 'subc-rpc-'));
    const bus = new EventBus(() => clock.now());
    events = [];
    bus.subscribe((e) => events.push(e));
    approvals = new ApprovalStore({ db: store.db, clock, ids: sequentialIds('ap'), events: bus });
    mcp = new McpManager({ servers: [filesystemServer(dir)], clock });
    rpc = new RpcDispatcher(implement(agentContract, agentRpcHandlers({ approvals, mcp })));
  });
  afterEach(async () => {
    await mcp.close();
    await store.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const newApproval = (runId = 'run-1') =>
    approvals.create({ runId, world: 'tasks', tool: 'write_file', server: 'fs', arguments: { path: 'x' }, reason: 'r', expiresAt: null });

  it('lists, approves and denies; answering twice is a conflict with its code', async () => {
    const a = await newApproval();
    const b = await newApproval('run-2');
    expect(((await rpc.call('approvals.list', { state: 'pending' })) as { approvals: unknown[] }).approvals).toHaveLength(2);

    expect(await rpc.call('approvals.approve', { id: a.id })).toMatchObject({ approval: { id: a.id, state: 'approved' } });
    expect(await rpc.call('approvals.deny', { id: b.id })).toMatchObject({ approval: { id: b.id, state: 'denied' } });
    expect(events.filter((e) => e.type === 'approvals.changed').map((e) => [e.data.id, e.data.state])).toEqual([
      [a.id, 'pending'],
      [b.id, 'pending'],
      [a.id, 'approved'],
      [b.id, 'denied'],
    ]);

    const again = await rpc.handle({ jsonrpc: '2.0', id: 1, method: 'approvals.deny', params: { id: a.id } });
    expect(again).toMatchObject({ error: { code: -32000, data: { code: 'conflict', state: 'approved' } } });
    const missing = await rpc.handle({ jsonrpc: '2.0', id: 2, method: 'approvals.approve', params: { id: 'nope' } });
    expect(missing).toMatchObject({ error: { code: -32000, data: { code: 'not_found' } } });
    expect(((await rpc.call('approvals.list', { run_id: 'run-1' })) as { approvals: Array<{ state: string }> }).approvals.map((x) => x.state)).toEqual([
      'approved',
    ]);
  });

  it('rejects bad params naming the field', async () => {
    const res = await rpc.handle({ jsonrpc: '2.0', id: 1, method: 'approvals.approve', params: {} });
    expect(res).toMatchObject({ error: { code: -32602 } });
    expect(JSON.stringify(res)).toContain('id');
    const bad = await rpc.handle({ jsonrpc: '2.0', id: 2, method: 'approvals.list', params: { state: 'maybe' } });
    expect(bad).toMatchObject({ error: { code: -32602 } });
    expect(JSON.stringify(bad)).toContain('state');
  });

  it('mcp.servers reports health, and check: true connects first', async () => {
    expect(await rpc.call('mcp.servers', {})).toEqual({ servers: [expect.objectContaining({ name: 'fs', status: 'disconnected', tools: [] })] });
    const checked = (await rpc.call('mcp.servers', { check: true })) as { servers: Array<{ status: string; tools: string[] }> };
    expect(checked.servers[0]!.status).toBe('connected');
    expect(checked.servers[0]!.tools).toContain('write_file');
  });
});
