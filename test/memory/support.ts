/** A memory store on a fresh test database (either dialect), its migrations applied on top of the engine's. */
import { EventBus, FakeClock, sequentialIds, type BusEvent } from '../../src/core/index.js';
import { MemoryStore, memoryMigrations, type MemoryTables } from '../../src/memory/index.js';
import type { MemoryEvents } from '../../src/protocol/memory.js';
import { applyMigrations, tablesView, type DialectName } from '../../src/store/index.js';
import type { Kysely } from 'kysely';
import { RpcDispatcher, type RpcMethod } from '../../src/core/rpc.js';
import type { BoundMethod } from '../../src/protocol/contract.js';
import { openTestStore, type TestStore } from '../support/stores.js';

export interface MemoryFixture {
  store: TestStore;
  db: Kysely<MemoryTables>;
  memory: MemoryStore;
  clock: FakeClock;
  bus: EventBus;
  events: BusEvent[];
  emit: <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => void;
  dispose(): Promise<void>;
}

export async function openMemory(dialect: DialectName, opts: { store?: TestStore; clock?: FakeClock } = {}): Promise<MemoryFixture> {
  const store = opts.store ?? (await openTestStore(dialect));
  await applyMigrations(store.db, store.dialect, memoryMigrations);
  const db = tablesView<MemoryTables>(store.db);
  const clock = opts.clock ?? new FakeClock();
  const bus = new EventBus(() => clock.now());
  const events: BusEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const emit = <K extends keyof MemoryEvents>(type: K, data: MemoryEvents[K]) => bus.emit(type, data);
  const memory = new MemoryStore({ db, dialect: store.dialect, clock, ids: sequentialIds('cp'), emit });
  return {
    store,
    db,
    memory,
    clock,
    bus,
    events,
    emit,
    dispose: () => (opts.store ? Promise.resolve() : store.dispose()),
  };
}

/** A small corpus with one obviously relevant document per query used in the tests. */
export const CORPUS = [
  {
    ns: 'mail',
    id: 'm1',
    title: 'Invoice 2291 is overdue',
    body: 'Hi, the invoice 2291 from ACME Corp is now 30 days overdue. Please arrange payment by Friday.',
  },
  { ns: 'mail', id: 'm2', title: 'Team lunch on Thursday', body: 'We are going to the Thai place on Thursday at noon. Reply if you want to join.' },
  {
    ns: 'mail',
    id: 'm3',
    title: 'Your flight to Lisbon',
    body: 'Booking confirmed: flight TP 1337 departs Monday 07:40 from Berlin to Lisbon. Check in online.',
  },
  { ns: 'notes', id: 'n1', title: 'Garden plan', body: 'Plant tomatoes in May. Water the herbs every morning. Buy compost.' },
  { ns: 'notes', id: 'n2', title: 'Reading list', body: 'Finish the book on distributed systems; then read about consensus and Raft.' },
  { ns: 'notes', id: 'n3', title: 'Payments to make', body: 'Rent on the first. Electricity bill. The ACME invoice is mentioned in mail.' },
  { ns: 'chat', id: 'c1', title: 'Anna', body: 'Anna asked whether the quarterly report is ready for review before the board meeting.' },
  { ns: 'chat', id: 'c2', title: 'Ben', body: 'Ben: the deployment of the payments service failed last night, rollback done.' },
];

export async function loadCorpus(memory: MemoryStore): Promise<void> {
  for (const d of CORPUS) await memory.storeDocument({ namespace: d.ns, external_id: d.id, title: d.title, body: d.body });
}

/** A dispatcher serving bound contract methods (bad params are answered as JSON-RPC errors). */
export function dispatcherFor(methods: readonly BoundMethod[]): RpcDispatcher {
  const rpc = new RpcDispatcher();
  // A bound handler takes its contract's parsed params; the dispatcher validates them before calling.
  for (const m of methods) rpc.add(m as unknown as RpcMethod);
  return rpc;
}
