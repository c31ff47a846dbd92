/**
 * Which writes a write-intent task's own words name (issue 9, DESIGN invariant 6). A run of such a
 * task reads outside text (the situation report, tool results, files), so it runs tainted: every
 * writing tool call asks first. The one exception is a call the task's words name — its kind of
 * action ("Send …" names posting a message, "Write … to notes.md" names writing a file) and, when
 * the call has a target (a path, a channel, a recipient), that target too. Everything else goes to
 * the person as an approval card, however the model came to want it.
 *
 *   namedWrite('Write the weekly digest to notes.md', 'write_file', { path: '/ws/notes.md', content })  → true
 *   namedWrite('Write the weekly digest to notes.md', 'write_file', { path: '/ws/evil.txt', content })  → false
 *   namedWrite('Write the weekly digest to notes.md', 'move_file', { … })                               → false
 */

/** Kinds of write, each with the words that name it (in a title or a tool's name). */
const KINDS: Record<string, readonly string[]> = {
  message: ['send', 'post', 'publish', 'message', 'email', 'mail', 'notify', 'reply', 'respond', 'forward', 'share', 'tweet', 'comment', 'ping', 'announce'],
  write: ['write', 'save', 'create', 'add', 'append', 'put', 'record', 'note', 'store', 'log', 'make', 'draft', 'generate', 'export'],
  change: ['edit', 'update', 'modify', 'change', 'set', 'mark', 'label', 'fix', 'patch', 'replace', 'rename', 'tag'],
  remove: ['delete', 'remove', 'trash', 'clear', 'purge', 'unsubscribe', 'drop'],
  move: ['move', 'rename', 'archive', 'file', 'sort', 'organize', 'organise'],
  plan: ['schedule', 'book', 'invite', 'cancel', 'reschedule', 'accept', 'decline', 'rsvp'],
  money: ['pay', 'purchase', 'order', 'buy', 'refund'],
  code: ['deploy', 'push', 'commit', 'merge', 'release', 'publish', 'tag'],
  decide: ['approve', 'reject', 'assign', 'close', 'open', 'resolve', 'submit'],
};

/**
 * The tool actions a title's kind of write covers: sending something somewhere writes it there
 * ("Send the digest to digest.txt"), and writing a file may change it. Removing and moving are
 * never covered by anything but their own words.
 */
const COVERS: Record<string, readonly string[]> = {
  message: ['message', 'write'],
  write: ['write', 'change'],
  change: ['change', 'write'],
};

const KIND_OF = new Map<string, string[]>();
for (const [kind, words] of Object.entries(KINDS)) for (const w of words) KIND_OF.set(w, [...(KIND_OF.get(w) ?? []), kind]);

/** The kinds a word names, with its common endings taken off ("sends", "posted", "writing"). */
function kindsOf(word: string): string[] {
  const w = word.toLowerCase();
  for (const stem of [w, w.replace(/(?:ing|ed|es|s)$/, ''), w.replace(/(?:ing|ed|es|s)$/, 'e'), w.replace(/(?:ied|ies)$/, 'y')]) {
    const kinds = KIND_OF.get(stem);
    if (kinds) return kinds;
  }
  return [];
}

/** `write_file` → write, file; `sendMessage` → send, message; `fs__edit_file` → edit, file. */
function words(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Argument names that say where a write lands. */
const TARGET_KEY =
  /^(?:path|paths|file|filename|source|destination|dest|target|to|cc|bcc|channel|recipient|recipients|email|address|url|repo|repository|folder|directory|dir|chat|room|thread|issue|page|database|calendar)$/i;

/**
 * Where a call's write lands, or null when it cannot be told: a target argument that is not a
 * non-empty text (a number, an object, an empty list) names nothing a title could name, so the
 * call is not the task's own (the gate fails closed).
 */
function targets(args: Record<string, unknown>): string[] | null {
  const out: string[] = [];
  for (const [key, value] of Object.entries(args)) {
    if (!TARGET_KEY.test(key) || value === undefined || value === null) continue;
    const values = Array.isArray(value) ? value : [value];
    if (!values.length) return null;
    for (const v of values) {
      if (typeof v !== 'string' || !v.trim()) return null;
      out.push(v.trim());
    }
  }
  return out;
}

/** Does the title name this target? A path by its file name, a channel or handle with or without its sign. */
function names(title: string, target: string): boolean {
  const t = title.toLowerCase();
  const value = target.toLowerCase();
  const base = value.split(/[\\/]/).filter(Boolean).at(-1) ?? value;
  return [value, base, base.replace(/^[#@]/, '')].some((candidate) => candidate.length >= 2 && containsToken(t, candidate));
}

function containsToken(text: string, token: string): boolean {
  let at = text.indexOf(token);
  while (at >= 0) {
    const before = at === 0 ? '' : text[at - 1]!;
    const after = text[at + token.length] ?? '';
    if (!/[a-z0-9]/.test(before) && !/[a-z0-9]/.test(after)) return true;
    at = text.indexOf(token, at + 1);
  }
  return false;
}

/**
 * True when the task's own words name this writing call: its kind of action, and each of its
 * targets. Anything it cannot read (arguments that are not an object, a target that is not text)
 * is not named: the call asks first.
 */
export function namedWrite(taskTitle: string, tool: string, args: unknown): boolean {
  if (typeof taskTitle !== 'string' || typeof tool !== 'string' || !isPlainObject(args)) return false;
  const asked = new Set(words(taskTitle).flatMap((w) => kindsOf(w).flatMap((k) => COVERS[k] ?? [k])));
  // The tool's action is its first word that names one (`write_file` writes; its `file` is the object).
  const verb = words(tool.replace(/^.*__/, '')).find((w) => kindsOf(w).length > 0);
  if (!verb || !kindsOf(verb).some((k) => asked.has(k))) return false;
  const where = targets(args);
  return where !== null && where.every((target) => names(taskTitle, target));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
