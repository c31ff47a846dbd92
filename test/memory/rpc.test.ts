/**
 * The memory store's RPC methods through the contract and a JSON-RPC dispatcher: documents
 * pushed, updated, listed, recalled and deleted; bad params are JSON-RPC errors naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RPC_APP_ERROR, RPC_INVALID_PARAMS, type RpcDispatcher } from '../../src/core/rpc.js';
import { memoryStoreHandlers } from '../../src/memory/index.js';
import { implement } from '../../src/protocol/contract.js';
import { memoryStoreMethods } from '../../src/protocol/memory.js';
import { testDialects } from '../support/stores.js';
import { dispatcherFor, openMemory, type MemoryFixture } from './support.js';

const dialects = await testDialects();

describe.each(dialects)('memory store RPC (%s)', (dialect) => {
  let f: MemoryFixture;
  let rpc: RpcDispatcher;
  const call = async (method: string, params: unknown) => rpc.handle({ jsonrpc: '2.0', id: 1, method, params });

  beforeAll(async () => {
    f = await openMemory(dialect);
    rpc = dispatcherFor(implement({ methods: memoryStoreMethods }, memoryStoreHandlers(f.memory)));
  });
  afterAll(async () => {
    await f.dispose();
  });

  it('stores, updates in place, recalls, lists and deletes', async () => {
    const doc = {
      namespace: 'crm',
      external_id: 'deal-7',
      title: 'Deal with Initech',
      body: 'Initech wants a renewal quote by March.',
      metadata: { owner: 'ann' },
    };
    expect(await call('memory.store_document', { ...doc, namespace_label: 'CRM', namespace_kind: 'crm' })).toMatchObject({
      result: { created: true, changed: true },
    });
    expect(await call('memory.store_document', doc)).toMatchObject({ result: { created: false, changed: false } });
    expect(await call('memory.namespaces', {})).toMatchObject({ result: [{ namespace: 'crm', label: 'CRM', kind: 'crm', documents: 1 }] });
    expect(await call('memory.recall', { query: 'renewal quote' })).toMatchObject({
      result: { hits: [{ external_id: 'deal-7', title: 'Deal with Initech', metadata: { owner: 'ann' }, snippet: expect.stringContaining('**') }] },
    });
    expect(await call('memory.get_document', { namespace: 'crm', external_id: 'deal-7' })).toMatchObject({ result: { body: doc.body } });
    expect(await call('memory.list_documents', { namespace: 'crm' })).toMatchObject({ result: { total: 1, documents: [{ external_id: 'deal-7' }] } });
    expect(await call('memory.delete_document', { namespace: 'crm', external_id: 'deal-7' })).toMatchObject({ result: { deleted: true } });
    expect(await call('memory.delete_document', { namespace: 'crm', external_id: 'deal-7' })).toMatchObject({ result: { deleted: false } });
    expect(await call('memory.get_document', { namespace: 'crm', external_id: 'deal-7' })).toMatchObject({
      error: { code: RPC_APP_ERROR, data: { code: 'not_found' } },
    });
  });

  it.each([
    ['memory.store_document', { namespace: 'has space', external_id: 'x', title: 't', body: '' }, /namespace: must be 1–64/],
    ['memory.store_document', { namespace: 'n', external_id: 'x', title: '   ', body: '' }, /title: must not be empty/],
    ['memory.store_document', { namespace: 'n', external_id: 'x', title: 't', body: '', metadata: { big: 'x'.repeat(20_000) } }, /metadata: must serialise/],
    ['memory.store_document', { namespace: 'n', external_id: 'x', title: 't', body: '', extra: 1 }, /Unrecognized key/],
    ['memory.recall', { query: 'x', limit: 0 }, /limit/],
    ['memory.recall', { query: 'x'.repeat(1001) }, /query: at most 1000/],
    ['memory.list_documents', { limit: 5000 }, /limit: at most 1000/],
  ])('%s refuses %j', async (method, params, message) => {
    expect(await call(method, params)).toMatchObject({ error: { code: RPC_INVALID_PARAMS, message: expect.stringMatching(message) } });
  });

  it('any query text is answered, never a syntax error', async () => {
    expect(await call('memory.recall', { query: '"(NEAR AND *' })).toMatchObject({ result: { hits: expect.any(Array) } });
  });
});
