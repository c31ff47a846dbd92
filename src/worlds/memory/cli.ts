/**
 * `subconscious sources list|test|add|pause|resume|resync|remove|sync`: memory sources managed
 * like accounts without the page. Every command is one RPC call (the methods the page uses);
 * `--json` prints the raw result. A new source is given as its kind, namespace and `key=value`
 * settings, as in `[[worlds.memory.sources]]`:
 *
 *   subconscious sources add imap gmail host=imap.gmail.com user=ada@gmail.com password_env=GMAIL_APP_PASSWORD folders=INBOX,Sent
 *   subconscious sources add caldav cal url=https://caldav.fastmail.com/dav/calendars/user/ada@fastmail.com/ user=ada@fastmail.com password_file=~/.fastmail
 *   subconscious sources add mcp notion command=npx args=-y,@notionhq/notion-mcp-server env_from.NOTION_TOKEN=MY_NOTION_TOKEN
 */
import type { Command } from 'commander';
import { SubconsciousError } from '../../core/errors.js';
import type { CliContext } from '../../engine/index.js';
import type { MemoryEvents, MemorySourceStatus, memoryContract } from '../../protocol/memory.js';

type Cli = CliContext<(typeof memoryContract)['methods'], MemoryEvents>;

/** Keys whose value is a list (`a,b,c`). */
const LIST_KEYS = new Set(['folders', 'calendars', 'args', 'include']);

export function registerSourcesCommands(sources: Command, { call, print }: Pick<Cli, 'call' | 'print'>): Command {
  sources
    .command('list')
    .description('the memory sources: last sync, documents, errors with what to do, next try')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows = await call('memory.sources', {});
      if (opts.json) return print(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return print('No memory sources. Add one: subconscious sources add <kind> <namespace> key=value…');
      for (const s of rows) for (const line of formatSource(s, Date.now())) print(line);
    });

  sources
    .command('test')
    .description('test connection of a source (by namespace), or of a new one (kind, namespace, key=value…)')
    .argument('<namespace-or-kind>')
    .argument('[rest...]', 'for a new source: its namespace and key=value settings')
    .option('--json', 'print JSON')
    .action(async (first: string, rest: string[], opts: { json?: boolean }) => {
      const r = await call('memory.sources_test', rest.length ? { source: sourceFromArgs(first, rest) } : { namespace: first });
      if (opts.json) return print(JSON.stringify(r, null, 2));
      print(r.ok ? 'ok: connection works' : `failed at ${r.failure!.kind}: ${r.failure!.message}\n  what to do: ${r.failure!.hint}`);
    });

  sources
    .command('add')
    .description('add a source (its connection is tested first): <kind> <namespace> key=value…; secrets by password_env= / password_file= / env_from.X=')
    .argument('<kind>', 'folder, imap, ics, caldav or mcp')
    .argument('<namespace>')
    .argument('[settings...]', 'key=value as in [[worlds.memory.sources]] (lists: a,b,c)')
    .option('--force', 'add it even when its test connection fails (it retries with backoff)')
    .option('--json', 'print JSON')
    .action(async (kind: string, namespace: string, settings: string[], opts: { force?: boolean; json?: boolean }) => {
      const r = await call('memory.sources_add', { source: sourceFromArgs(kind, [namespace, ...settings]), ...(opts.force && { force: true }) });
      if (opts.json) return print(JSON.stringify(r, null, 2));
      print(r.message);
    });

  for (const [name, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    sources
      .command(name)
      .description(paused ? 'pause a source: no syncs; its documents stay' : 'resume a paused source (it syncs now)')
      .argument('<namespace>')
      .option('--json', 'print JSON')
      .action(async (namespace: string, opts: { json?: boolean }) => {
        const r = await call('memory.sources_pause', { namespace, paused });
        print(opts.json ? JSON.stringify(r, null, 2) : r.message);
      });
  }

  sources
    .command('resync')
    .description('read a source again from the start (what is gone becomes a removal)')
    .argument('<namespace>')
    .option('--json', 'print JSON')
    .action(async (namespace: string, opts: { json?: boolean }) => {
      const r = await call('memory.sources_resync', { namespace });
      print(opts.json ? JSON.stringify(r, null, 2) : r.message);
    });

  sources
    .command('remove')
    .description('remove an added source; its documents are deleted (removals in the memory diff) unless --keep-documents')
    .argument('<namespace>')
    .option('--keep-documents', 'keep its documents as a plain namespace')
    .option('--json', 'print JSON')
    .action(async (namespace: string, opts: { keepDocuments?: boolean; json?: boolean }) => {
      const r = await call('memory.sources_remove', { namespace, ...(opts.keepDocuments && { keep_documents: true }) });
      print(opts.json ? JSON.stringify(r, null, 2) : r.message);
    });

  sources
    .command('sync')
    .description('sync one source now, or all')
    .argument('[namespace]')
    .action(async (namespace: string | undefined) => {
      const r = await call('memory.sync', namespace === undefined ? {} : { namespace });
      print(r.message);
    });
  return sources;
}

/** `<kind> <namespace> key=value…` as a source object (numbers and booleans typed, lists split, `a.b=` nested). */
export function sourceFromArgs(kind: string, rest: readonly string[]): { kind: string; namespace: string; [key: string]: unknown } {
  const [namespace, ...pairs] = rest;
  if (!namespace)
    throw new SubconsciousError('invalid_params', 'A new source needs a namespace after its kind.', {
      hint: 'subconscious sources add <kind> <namespace> key=value…',
    });
  const source: { kind: string; namespace: string; [key: string]: unknown } = { kind, namespace };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new SubconsciousError('invalid_params', `"${pair}" is not key=value.`, {
        hint: 'e.g. host=imap.gmail.com user=ada@gmail.com password_env=GMAIL_APP_PASSWORD',
      });
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    const value: unknown = LIST_KEYS.has(key)
      ? raw.split(',').filter(Boolean)
      : /^-?\d+(\.\d+)?$/.test(raw)
        ? Number(raw)
        : raw === 'true'
          ? true
          : raw === 'false'
            ? false
            : raw;
    const dot = key.indexOf('.');
    if (dot > 0) {
      const parent = key.slice(0, dot);
      const inner = (source[parent] ??= {}) as Record<string, unknown>;
      inner[key.slice(dot + 1)] = raw;
    } else source[key] = value;
  }
  return source;
}

/** One source as a few lines: what, state, last sync, error with what to do, next try. */
export function formatSource(s: MemorySourceStatus, now: number): string[] {
  const state = s.paused ? 'paused' : s.syncing ? 'syncing' : s.last_sync?.error ? 'failing' : s.last_sync ? 'ok' : 'not synced yet';
  const lines = [`${s.namespace} (${s.kind}${s.origin === 'added' ? ', added' : ''}) ${state}: ${s.path}`];
  lines.push(`  documents: ${s.documents}${s.skipped_total ? `, skipped: ${s.skipped_total}` : ''}${s.watching ? ', following live' : ''}`);
  if (s.progress) lines.push(`  progress: ${s.progress.part} ${s.progress.done} of ${s.progress.total}`);
  if (s.last_sync) {
    const l = s.last_sync;
    lines.push(`  last sync: +${l.added} ~${l.modified} -${l.removed} in ${l.duration_ms} ms`);
    if (l.error) lines.push(`  error (${l.failure?.kind ?? 'other'}): ${l.error}`, ...(l.failure ? [`  what to do: ${l.failure.hint}`] : []));
  }
  if (s.next_sync_at !== null) {
    const mins = Math.max(0, Math.round((s.next_sync_at - now) / 60_000));
    lines.push(`  next ${s.failures ? `try (failed ${s.failures}×)` : 'sync'}: ${new Date(s.next_sync_at).toISOString()} (in ${mins} min)`);
  }
  return lines;
}
