/**
 * Example (a): the engine in your own process, with a world of your own.
 *
 * A "notes" world: your product adds notes over RPC; each tick the world looks for notes it has
 * not digested (observe, 0 tokens: a quiet tick costs nothing), and commits a digest. The engine
 * gives it the lock, the checkpoints, the schedule and status. A real world would call
 * `ctx.llm` in `reflect` (every call is metered in the ledger); this one needs no model.
 *
 *   npx tsx examples/embed-engine.ts            (from a checkout)
 *   node embed-engine.js                        (compiled, with subconscious-engine installed)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { createApp, createRpcClient, defineContract, defineModule, method, silentLogger, type MethodsOf, type World } from 'subconscious-engine';

type Note = { id: number; text: string };
type NotesEvents = { 'notes.digested': { count: number; digest: string } };

const notesContract = defineContract<NotesEvents>()({
  methods: {
    'notes.add': method(z.strictObject({ text: z.string().min(1).max(500) }), 'Add a note.').returns<Note>(),
    'notes.digest': method(z.strictObject({}), 'The last digest.').returns<{ digest: string | null }>(),
  },
  events: ['notes.digested'],
});

const notesModule = defineModule({
  kind: 'notes',
  description: 'Digests the notes added since the last tick.',
  config: z.object({ interval_minutes: z.number().positive().default(30) }),
  contract: notesContract,
  create(ctx) {
    const notes: Note[] = [];
    let digest: string | null = null;
    const world: World<Note[], Note[], string> = {
      kind: 'notes',
      roles: [],
      intervalMinutes: () => ctx.config.interval_minutes,
      async observe(tick) {
        const seen = (await tick.state.get<number>('seen')) ?? 0;
        const fresh = notes.filter((n) => n.id > seen);
        return { quiet: fresh.length === 0, tainted: false, data: fresh };
      },
      prepareContext: async (_tick, observation) => observation.data,
      reflect: async (_tick, fresh) => fresh.map((n) => `- ${n.text}`).join('\n'),
      async commit(tick, { observation, reflection }) {
        if (!reflection) return { summary: 'nothing new' };
        // State advances only here, on success: a failed tick digests the same notes again.
        await tick.state.set('seen', observation.data.at(-1)!.id);
        digest = reflection;
        ctx.events.emit('notes.digested', { count: observation.data.length, digest: reflection });
        return { summary: `digested ${observation.data.length} notes`, counts: { notes: observation.data.length } };
      },
    };
    return {
      world,
      handlers: {
        'notes.add': ({ text }) => {
          const note = { id: notes.length + 1, text };
          notes.push(note);
          return note;
        },
        'notes.digest': () => ({ digest }),
      },
    };
  },
});

const workspace = mkdtempSync(path.join(os.tmpdir(), 'notes-example-'));
const app = await createApp({ workspace, modules: [notesModule], log: silentLogger });
try {
  const call = createRpcClient<MethodsOf<typeof notesContract>>((name, params) => app.rpc.call(name, params));
  // The app's bus is typed with the product's events; your module's travel on it too.
  app.events.subscribe((event: { type: string; data: Record<string, unknown> }) => {
    if (event.type === 'notes.digested') console.log(`event ${event.type}: ${JSON.stringify(event.data)}`);
  });
  await call('notes.add', { text: 'Ask Dana about the contract' });
  await call('notes.add', { text: 'Renew the domain' });
  const [first] = await app.registry.tickOnce('notes');
  console.log(`tick: ${first?.kind} — ${first?.message}`);
  const [second] = await app.registry.tickOnce('notes');
  console.log(`tick: ${second?.kind} — ${second?.message}`);
  console.log(`digest: ${JSON.stringify((await call('notes.digest')).digest)}`);
  const [status] = await app.registry.status();
  console.log(`status: ${status?.world} ticks=${status?.total_ticks}`);
} finally {
  await app.close();
  rmSync(workspace, { recursive: true, force: true });
}
