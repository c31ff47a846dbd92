/** `@name` completion in a group thread's composer. */

/** The `@word` being typed at the caret, if any: where it starts and what is typed after the `@`. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const m = /(?:^|[^\w@])@([a-z0-9_-]*)$/i.exec(before);
  if (!m) return null;
  return { start: caret - m[1]!.length - 1, query: m[1]!.toLowerCase() };
}

/** Replace the `@word` at the caret with `@name ` and say where the caret goes. */
export function completeMention(text: string, caret: number, name: string): { text: string; caret: number } {
  const at = mentionAt(text, caret);
  if (!at) return { text, caret };
  const rest = text.slice(caret).replace(/^[a-z0-9_-]*/i, '');
  const inserted = `@${name}${rest.startsWith(' ') ? '' : ' '}`;
  return { text: text.slice(0, at.start) + inserted + rest, caret: at.start + inserted.length };
}

/** The @names a text mentions (as the daemon reads them). */
export function mentioned(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|[^\w@])@([a-z][a-z0-9_-]{0,31})\b/gi)) {
    const name = m[1]!.toLowerCase();
    if (!out.includes(name)) out.push(name);
  }
  return out;
}
