/**
 * What the workspace scan leaves out, so a quiet workspace stays quiet (issue 10: no call when
 * nothing changed): files that change by themselves — version control, dependencies, our own
 * database and its WAL, editor swap and backup files, OS litter. `[worlds.tasks] workspace_ignore`
 * adds globs to this list; it never takes any away.
 *
 * Globs, gitignore-like and small: a pattern without `/` matches a name at any depth
 * (`*.swp`), one with `/` matches the path from the workspace root (`logs/*.txt`), a trailing `/`
 * matches a folder and all under it (`tmp/`); `*` is any run of characters but `/`, `**` any run
 * including `/`, `?` one character.
 */

export const DEFAULT_WORKSPACE_IGNORE: readonly string[] = [
  '.git/',
  'node_modules/',
  '.subconscious/',
  'dist/',
  'build/',
  '.cache/',
  // Editors: vim swap and its write test, emacs autosave and lock, backups.
  '*.swp',
  '*.swo',
  '*.swx',
  '4913',
  '*~',
  '#*#',
  '.#*',
  // SQLite databases and their WAL, shared memory and journal files (ours, or an app's).
  '*.db',
  '*.db-wal',
  '*.db-shm',
  '*.db-journal',
  '*.sqlite',
  '*.sqlite3',
  '*.sqlite-wal',
  '*.sqlite-shm',
  '*.sqlite-journal',
  // OS litter.
  '.DS_Store',
  'Thumbs.db',
];

interface Rule {
  re: RegExp;
  /** Matches the path from the root (the pattern had a `/`), else any name along the path. */
  anchored: boolean;
  dirOnly: boolean;
}

function toRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        out += '.*';
        i++;
        if (glob[i + 1] === '/') i++; // `**/` also matches no folder at all
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

function compile(glob: string): Rule | null {
  let g = glob.trim().replace(/\\/g, '/');
  if (!g) return null;
  const dirOnly = g.endsWith('/');
  if (dirOnly) g = g.replace(/\/+$/, '');
  const anchored = g.includes('/');
  if (g.startsWith('/')) g = g.slice(1);
  return g ? { re: toRegExp(g), anchored, dirOnly } : null;
}

/** `(relativePath, isDirectory) => ignored?`, for the built-in list plus `extra`. */
export function workspaceIgnore(extra: readonly string[] = []): (rel: string, isDir: boolean) => boolean {
  const rules = [...DEFAULT_WORKSPACE_IGNORE, ...extra].map(compile).filter((r): r is Rule => r !== null);
  return (rel, isDir) => {
    const name = rel.slice(rel.lastIndexOf('/') + 1);
    return rules.some((r) => (!r.dirOnly || isDir) && r.re.test(r.anchored ? rel : name));
  };
}
