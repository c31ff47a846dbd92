/**
 * `npx tsx bench/sources.bench.ts` (`npm run bench:sources`) — what an IMAP mailbox costs to
 * follow, beside the folder source for the same documents. Figures are printed, never asserted.
 *
 *  1. A BENCH_MESSAGES-message INBOX (default 10,000) on a real Dovecot (started here, as the
 *     tests do): the imap source's first sync — time, messages per second, peak heap and RSS
 *     above the start — then BENCH_NEW (default 100) new messages: the incremental sync's time.
 *  2. The same messages as `.eml` files in a folder: the folder source's first sync and its
 *     incremental sync after the same new files.
 *
 * Both write to a fresh SQLite file each. Dovecot must be installed (scripts/ensure-mail-servers.sh).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock, sequentialIds, silentLogger } from '../src/core/index.js';
import { FolderSource, ImapSource, MemoryStore, memoryMigrations, type MemoryTables, type SyncResult } from '../src/memory/index.js';
import { applyMigrations, openStore, tablesView, type Store } from '../src/store/index.js';
import { dovecotAvailable, startDovecot } from '../devtools/dovecot.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
const NEW = Number(process.env.BENCH_NEW ?? 100);

function message(n: number): string {
  const para = `Paragraph ${n}: the quarterly numbers for project ${n % 97} are due on Friday; please review the attached notes and reply with questions. `;
  return [
    `From: Sender ${n % 300} <s${n % 300}@example.com>`,
    'To: ada@example.com',
    `Subject: Update ${n} on project ${n % 97}`,
    `Date: ${new Date(Date.UTC(2026, 0, 1) + n * 60_000).toUTCString()}`,
    `Message-ID: <bench-${n}@example.com>`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    para.repeat(1 + (n % 8)),
    '',
  ].join('\r\n');
}

interface Measured {
  ms: number;
  heapMb: number;
  rssMb: number;
  result: SyncResult;
}

/** Run one sync, sampling memory every 20 ms: its time and peak heap / RSS above the start. */
async function measure(sync: () => Promise<SyncResult>): Promise<Measured> {
  (globalThis as { gc?: () => void }).gc?.();
  const start = process.memoryUsage();
  let heap = start.heapUsed;
  let rss = start.rss;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    heap = Math.max(heap, m.heapUsed);
    rss = Math.max(rss, m.rss);
  }, 20);
  const t0 = performance.now();
  const result = await sync();
  const ms = performance.now() - t0;
  clearInterval(timer);
  const end = process.memoryUsage();
  heap = Math.max(heap, end.heapUsed);
  rss = Math.max(rss, end.rss);
  if (result.error) throw new Error(`sync failed: ${result.error}`);
  return { ms, heapMb: (heap - start.heapUsed) / 1024 / 1024, rssMb: (rss - start.rss) / 1024 / 1024, result };
}

async function memoryOn(
  dir: string,
  name: string,
): Promise<{ store: Store; memory: MemoryStore; db: ReturnType<typeof tablesView<MemoryTables>>; clock: FakeClock }> {
  const store = await openStore({ sqliteFile: path.join(dir, `${name}.db`) });
  await applyMigrations(store.db, store.dialect, memoryMigrations);
  const db = tablesView<MemoryTables>(store.db);
  const clock = new FakeClock();
  return { store, memory: new MemoryStore({ db, dialect: store.dialect, clock, ids: sequentialIds(name) }), db, clock };
}

const fmt = (m: Measured, n: number) =>
  `${(m.ms / 1000).toFixed(2).padStart(7)} s  ${String(Math.round((n / m.ms) * 1000)).padStart(6)} msg/s  heap +${m.heapMb.toFixed(0).padStart(4)} MB  rss +${m.rssMb.toFixed(0).padStart(4)} MB`;

async function main(): Promise<void> {
  if (!dovecotAvailable()) throw new Error('Dovecot is not installed: run scripts/ensure-mail-servers.sh');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subc-bench-sources-'));
  const imap = await startDovecot({ users: { bench: 'secret' } });
  try {
    const folder = path.join(dir, 'mail');
    mkdirSync(folder);
    const t0 = performance.now();
    const raws: string[] = [];
    for (let i = 1; i <= MESSAGES; i++) {
      const raw = message(i);
      raws.push(raw);
      writeFileSync(path.join(folder, `m${String(i).padStart(6, '0')}.eml`), raw);
    }
    // Delivered into the maildir (as a local delivery agent would): appending 10,000 over IMAP takes minutes.
    imap.deliver('bench', raws);
    console.log(`setup: ${MESSAGES} messages delivered to Dovecot and written as .eml in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

    const a = await memoryOn(dir, 'imap');
    const imapSource = new ImapSource(
      { store: a.memory, db: a.db, clock: a.clock, log: silentLogger },
      {
        namespace: 'mail',
        host: imap.host,
        port: imap.port,
        tls: false,
        tlsVerify: true,
        user: 'bench',
        auth: 'password',
        secret: () => 'secret',
        folders: ['INBOX'],
        debounceMs: 0,
        batchSize: 200,
        maxMessageBytes: 25 * 1024 * 1024,
        maxBodyChars: 200_000,
      },
    );
    const imapFirst = await measure(() => imapSource.sync());
    const b = await memoryOn(dir, 'folder');
    const folderSource = new FolderSource({ store: b.memory, db: b.db, clock: b.clock, log: silentLogger }, { namespace: 'mail', root: folder });
    const folderFirst = await measure(() => folderSource.sync());

    // The new ones arrive over IMAP (APPEND), as mail from another client would.
    for (let i = MESSAGES + 1; i <= MESSAGES + NEW; i++) {
      const raw = message(i);
      await imap.append('bench', 'INBOX', raw);
      writeFileSync(path.join(folder, `m${String(i).padStart(6, '0')}.eml`), raw);
    }
    const imapNext = await measure(() => imapSource.sync());
    const folderNext = await measure(() => folderSource.sync());
    const imapQuiet = await measure(() => imapSource.sync());
    const folderQuiet = await measure(() => folderSource.sync());

    console.log(`first sync of ${MESSAGES} messages (documents: imap ${imapFirst.result.added}, folder ${folderFirst.result.added})`);
    console.log(`  imap   ${fmt(imapFirst, MESSAGES)}`);
    console.log(`  folder ${fmt(folderFirst, MESSAGES)}`);
    console.log(`incremental: ${NEW} new messages (added: imap ${imapNext.result.added}, folder ${folderNext.result.added})`);
    console.log(`  imap   ${fmt(imapNext, NEW)}`);
    console.log(`  folder ${fmt(folderNext, NEW)}`);
    console.log('nothing new (a quiet sync)');
    console.log(`  imap   ${imapQuiet.ms.toFixed(0).padStart(7)} ms`);
    console.log(`  folder ${folderQuiet.ms.toFixed(0).padStart(7)} ms`);
    await a.store.close();
    await b.store.close();
  } finally {
    await imap.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
