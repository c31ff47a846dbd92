/**
 * The situation report (seed 1, step 3): what the model sees besides the tasks. It covers the
 * window since the last successful tick (`since`), so after failed ticks it covers all of them.
 * Sections, most important first: recent failures, system health (models, skills, failures —
 * what "Monitor system health" needs), skills (MCP health), memory (the memory store's changes
 * since the last evaluation when one is connected), workspace state. Everything from outside is
 * fenced; the whole stays within its token budget (items are dropped from the end of a section
 * with a note saying how many).
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from '../../core/errors.js';
import { estimateTokens, fence } from '../../llm/index.js';
import type { LogEntry, MemoryItem, ModelHealth, SkillHealth } from './types.js';
import { workspaceIgnore } from './workspace-ignore.js';

export interface SituationInput {
  now: number;
  since: number | null;
  failures: LogEntry[];
  /** undefined: no MCP manager is wired. */
  skills: SkillHealth[] | undefined;
  skillsError?: string | undefined;
  /** undefined: no memory source is wired. */
  memory: MemoryItem[] | undefined;
  memoryError?: string | undefined;
  /**
   * The memory store's changes since the last evaluation (its `renderDiff`), when a store is
   * connected: it replaces the recent-memory list.
   */
  memoryChanges?: { rendered: string; changes: number; since: number | null } | undefined;
  /** The models' last probe and the failure count, for the system-health section (absent: left out). */
  health?: { models: ModelHealth[]; failures24h: number; memoryConnected: boolean } | undefined;
  workspace: WorkspaceState;
}

export interface WorkspaceState {
  root: string;
  heartbeat: { exists: boolean; tasks: number; changedInWindow: boolean };
  /** Files modified in the window, newest first. */
  changedFiles: { path: string; mtimeMs: number }[];
  scannedFiles: number;
  /** True when the walk stopped at its cap. */
  truncated: boolean;
  /** A digest of every scanned file's path, size and mtime: it changes when any file does (a fingerprint input). */
  digest?: string | undefined;
}

export interface SituationReport {
  text: string;
  tokens: number;
  budget: number;
  sections: { name: string; items: number; omitted: number; tokens: number }[];
}

interface Section {
  name: string;
  title: string;
  /** Shown when `items` is empty. */
  empty: string;
  items: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export function buildSituationReport(input: SituationInput, budgetTokens: number): SituationReport {
  const windowLine =
    input.since === null
      ? 'Window: everything so far (this is the first successful tick).'
      : `Window: since the last successful tick at ${iso(input.since)} (${Math.max(0, Math.round((input.now - input.since) / 60_000))} minutes).`;
  const header = `# Situation report at ${iso(input.now)}\n${windowLine}\n`;

  const sections: Section[] = [
    {
      name: 'failures',
      title: '## Recent failures',
      empty: 'No task failed in this window.',
      items: failureLines(input.failures),
    },
    ...(input.health ? [healthSection(input)] : []),
    {
      name: 'skills',
      title: '## Connected skills (MCP servers)',
      empty:
        input.skillsError !== undefined
          ? `Skill health could not be read: ${fence(input.skillsError, { label: 'error', maxChars: 300 })}`
          : input.skills === undefined
            ? 'No skills (MCP servers) are configured.'
            : 'No skill (MCP server) is connected.',
      items: (input.skills ?? []).map((s) => {
        const tools = Array.isArray(s.tools) ? s.tools.length : s.tools;
        const parts = [`- ${fence(s.name, { label: 'skill', maxChars: 80 })}: ${statusWord(s.status)}`];
        if (tools !== undefined) parts.push(`${tools} tools`);
        if (s.last_checked_at) parts.push(`checked ${iso(s.last_checked_at)}`);
        if (s.error) parts.push(`error ${fence(s.error, { label: 'skill_error', maxChars: 300 })}`);
        return parts.join(', ');
      }),
    },
    input.memoryChanges
      ? {
          name: 'memory',
          title: '## Memory changes',
          empty:
            input.memoryError !== undefined
              ? `Memory could not be read: ${fence(input.memoryError, { label: 'error', maxChars: 300 })}`
              : input.memoryChanges.since === null
                ? 'Memory is empty.'
                : 'Nothing in memory changed since the last evaluation.',
          items:
            input.memoryError === undefined && input.memoryChanges.changes > 0
              ? [
                  `- Since ${input.memoryChanges.since === null ? 'the beginning' : `the last evaluation at ${iso(input.memoryChanges.since)}`}:\n${fence(input.memoryChanges.rendered, { label: 'memory_changes', maxChars: 12_000 })}`,
                ]
              : [],
        }
      : {
          name: 'memory',
          title: '## Recent memory',
          empty:
            input.memoryError !== undefined
              ? `Memory could not be read: ${fence(input.memoryError, { label: 'error', maxChars: 300 })}`
              : input.memory === undefined
                ? 'No memory exists yet (no memory source is connected).'
                : input.since === null
                  ? 'No memory exists yet.'
                  : 'No memory changed in this window.',
          items: (input.memory ?? []).map(
            (m) => `- ${iso(m.updatedAt)} ${fence(m.title, { label: 'memory_title', maxChars: 200 })}\n  ${fence(m.text, { label: 'memory', maxChars: 1200 })}`,
          ),
        },
    {
      name: 'workspace',
      title: '## Workspace',
      empty: input.workspace.truncated ? 'No changed file found among the files scanned.' : 'No file changed in this window.',
      items: [
        `- HEARTBEAT.md: ${input.workspace.heartbeat.exists ? `${input.workspace.heartbeat.tasks} task lines${input.workspace.heartbeat.changedInWindow ? ', changed in this window' : ''}` : 'absent'}`,
        ...(input.workspace.changedFiles.length
          ? [
              `- ${input.workspace.changedFiles.length} file(s) changed in this window${input.workspace.truncated ? ` (scan stopped after ${input.workspace.scannedFiles} files)` : ''}:`,
              ...input.workspace.changedFiles.map((f) => `  - ${iso(f.mtimeMs)} ${fence(f.path, { label: 'path', maxChars: 300 })}`),
            ]
          : []),
      ],
    },
  ];

  let text = header;
  let used = estimateTokens(text);
  const stats: SituationReport['sections'] = [];
  for (let i = 0; i < sections.length; i++) {
    const s = sections[i]!;
    // Keep room for the later sections' titles and a one-line note each.
    const reserve = sections.slice(i + 1).reduce((n, later) => n + estimateTokens(`\n${later.title}\n${later.empty}\n`) + 12, 0);
    const start = used;
    const head = `\n${s.title}\n`;
    const lines: string[] = [];
    let cost = estimateTokens(head);
    let omitted = 0;
    const items = s.items.length ? s.items : [s.empty];
    for (let k = 0; k < items.length; k++) {
      const line = `${items[k]}\n`;
      const t = estimateTokens(line);
      const note = k < items.length - 1 ? 12 : 0;
      if (used + cost + t + note + reserve > budgetTokens) {
        omitted = items.length - k;
        break;
      }
      lines.push(line);
      cost += t;
    }
    if (lines.length === 0 && used + cost + reserve > budgetTokens) {
      stats.push({ name: s.name, items: 0, omitted: s.items.length, tokens: 0 });
      continue;
    }
    let block = head + lines.join('');
    if (omitted) block += `(${omitted} more omitted to stay within the context budget)\n`;
    text += block;
    used = estimateTokens(text);
    stats.push({ name: s.name, items: s.items.length ? lines.length : 0, omitted: s.items.length ? omitted : 0, tokens: used - start });
  }
  return { text, tokens: used, budget: budgetTokens, sections: stats };
}

/** Models, skills and failures at a glance: what "Monitor system health" is about. */
function healthSection(input: SituationInput): Section {
  const h = input.health!;
  const models = h.models.map((m) => {
    const name = m.model ? ` (${fence(m.model, { label: 'model', maxChars: 80 })})` : '';
    const state =
      m.available === null
        ? 'not checked yet'
        : m.available
          ? `reachable (checked ${iso(m.checked_at ?? input.now)})`
          : `UNREACHABLE: ${fence(m.reason ?? 'no answer', { label: 'error', maxChars: 300 })}`;
    return `- ${m.role} model${name}: ${state}; needed for ${m.needed_for}`;
  });
  const skills = input.skills;
  const unhealthy = (skills ?? []).filter((s) => s.status !== 'connected');
  const skillLine =
    input.skillsError !== undefined
      ? '- skills (MCP servers): their health could not be read'
      : skills === undefined
        ? '- skills (MCP servers): none configured'
        : `- skills (MCP servers): ${skills.length - unhealthy.length} of ${skills.length} connected${unhealthy.length ? ` (not connected: ${unhealthy.map((s) => `${fence(s.name, { label: 'skill', maxChars: 80 })} ${statusWord(s.status)}`).join(', ')})` : ''}`;
  return {
    name: 'health',
    title: '## System health',
    empty: 'Nothing is known about the system yet.',
    items: [
      ...models,
      skillLine,
      `- memory store: ${h.memoryConnected ? 'connected' : 'not connected'}`,
      `- task runs failed in the last 24 hours: ${h.failures24h}`,
    ],
  };
}

function statusWord(status: string): string {
  return /^[a-z_ -]{1,20}$/i.test(status) ? status : 'unknown';
}

/**
 * Files under `root` modified at or after `since` (all files when `since` is null), newest
 * first. Bounded: stops after `maxScan` entries so a huge workspace cannot stall a tick.
 */
export async function scanWorkspace(
  root: string,
  since: number | null,
  heartbeat: { exists: boolean; tasks: number; mtimeMs: number | null },
  opts: { maxScan?: number; maxListed?: number; ignore?: readonly string[] } = {},
): Promise<WorkspaceState> {
  const ignored = workspaceIgnore(opts.ignore);
  const maxScan = opts.maxScan ?? 5000;
  const maxListed = opts.maxListed ?? 100;
  const changed: { path: string; mtimeMs: number }[] = [];
  const digest = createHash('sha256');
  let scanned = 0;
  let truncated = false;
  const queue = [''];
  while (queue.length) {
    const rel = queue.shift()!;
    let entries;
    try {
      entries = await readdir(path.join(root, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    // A stable order: the digest must not change because the directory listed itself differently.
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (scanned >= maxScan) {
        truncated = true;
        break;
      }
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        // Hidden folders are tools' state, not the person's files; the rest unless ignored.
        if (!e.name.startsWith('.') && !ignored(child, true)) queue.push(child);
        continue;
      }
      if (!e.isFile() || ignored(child, false)) continue;
      scanned++;
      try {
        const s = await stat(path.join(root, child));
        digest.update(`${child}\0${s.size}\0${s.mtimeMs}\n`);
        if (since === null || s.mtimeMs >= since) changed.push({ path: child, mtimeMs: s.mtimeMs });
      } catch {
        // Vanished between readdir and stat: not a change worth reporting.
      }
    }
    if (truncated) break;
  }
  changed.sort((a, b) => b.mtimeMs - a.mtimeMs || a.path.localeCompare(b.path));
  return {
    root,
    heartbeat: {
      exists: heartbeat.exists,
      tasks: heartbeat.tasks,
      changedInWindow: heartbeat.exists && heartbeat.mtimeMs !== null && (since === null || heartbeat.mtimeMs >= since),
    },
    changedFiles: changed.slice(0, maxListed),
    scannedFiles: scanned,
    truncated,
    digest: digest.digest('hex'),
  };
}

/**
 * One line per distinct error, newest first, with when it happened and to which tasks: an outage
 * fails every due task every tick with the same message, and one line says all of that.
 */
function failureLines(failures: LogEntry[]): string[] {
  const groups = new Map<string, LogEntry[]>();
  for (const f of failures) {
    const key = f.result ?? '';
    const group = groups.get(key);
    if (group) group.push(f);
    else groups.set(key, [f]);
  }
  return [...groups.entries()].map(([error, rows]) => {
    const times = [...new Set(rows.map((r) => iso(r.updated_at)))];
    const titles = [...new Set(rows.map((r) => r.task_title))];
    const shownTimes = times.length > 6 ? [...times.slice(0, 5), `… ${times.length - 6} more …`, times.at(-1)!] : times;
    const shownTitles = titles.slice(0, 5).map((t) => fence(t, { label: 'task_title', maxChars: 200 }));
    const more = titles.length > 5 ? ` and ${titles.length - 5} more` : '';
    const count = rows.length === 1 ? 'task' : `${rows.length} task runs`;
    return `- ${shownTimes.join(', ')}: ${count} failed (${shownTitles.join(', ')}${more}): ${fence(error, { label: 'error', maxChars: 400 })}`;
  });
}

/** Read a source without letting its failure fail the tick: the report says it could not. */
export async function readSafely<T>(read: (() => Promise<T> | T) | undefined): Promise<{ value: T | undefined; error?: string }> {
  if (!read) return { value: undefined };
  try {
    return { value: await read() };
  } catch (err) {
    return { value: undefined, error: describeError(err) };
  }
}
