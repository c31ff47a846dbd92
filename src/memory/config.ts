/**
 * Memory sources as configured in `subconscious.toml` (the memory world's section holds them):
 *
 *   [[worlds.memory.sources]]
 *   kind = "folder"
 *   path = "~/Mail/export"        # absolute, ~/…, or relative to the workspace
 *   namespace = "mail"
 *   label = "Mail export"         # optional; shown in diffs and on the page
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { NAMESPACE_PATTERN } from '../protocol/memory.js';

export const folderSourceSchema = z.strictObject({
  kind: z.literal('folder'),
  path: z.string().trim().min(1, 'must name a folder'),
  namespace: z.string().regex(NAMESPACE_PATTERN, 'must be 1–64 letters, digits or _ . : @ - (starting with a letter or digit)'),
  label: z.string().trim().min(1, 'must not be empty').max(100, 'at most 100 characters').optional(),
  /** Include sub-folders (hidden ones, starting with `.`, never). */
  recursive: z.boolean().default(true),
  /** Sync when files change (fs.watch), after `debounce_ms` of quiet. */
  watch: z.boolean().default(true),
  debounce_ms: z.number().int('must be whole milliseconds').min(100, 'must be at least 100').max(60_000, 'at most 60000').default(2_000),
  /** A full sync this often whatever the watcher saw (it misses changes on some file systems). */
  sync_interval_minutes: z.number().min(1, 'must be at least 1').max(1440, 'at most 1440').default(15),
  /** Larger files are skipped with a reason. */
  max_file_mb: z.number().positive('must be positive').max(4096, 'at most 4096').default(256),
});

export const memorySourceSchema = z.discriminatedUnion('kind', [folderSourceSchema], {
  error: (issue) => (issue.code === 'invalid_union' ? 'kind must be "folder"' : undefined),
});

export const memorySourcesSchema = z
  .array(memorySourceSchema)
  .default([])
  .superRefine((sources, ctx) => {
    const seen = new Set<string>();
    sources.forEach((s, i) => {
      if (seen.has(s.namespace))
        ctx.addIssue({ code: 'custom', path: [i, 'namespace'], message: `"${s.namespace}" is used by another source: one namespace per source` });
      seen.add(s.namespace);
    });
  });

export type FolderSourceConfig = z.output<typeof folderSourceSchema>;
export type MemorySourceConfig = z.output<typeof memorySourceSchema>;

/** A source path as an absolute path: `~` is the home folder, a relative path is under the workspace. */
export function resolveSourcePath(workspace: string, p: string): string {
  if (p === '~' || p.startsWith('~/')) return path.join(os.homedir(), p.slice(1));
  return path.resolve(workspace, p);
}
