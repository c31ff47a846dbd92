/**
 * Counted words for text a person reads: "1 task", "2 tasks", never "task(s)".
 */

/** `n thing` / `n things` (or the given plural). */
export function plural(n: number, unit: string, many = `${unit}s`): string {
  return `${n} ${n === 1 ? unit : many}`;
}

/** A config issue in words: the unknown keys named (`unknown key "x"`, `unknown keys "x", "y"`), else its own message. */
export function configIssueReason(issue: { code: string; message: string; keys?: readonly PropertyKey[] }): string {
  if (issue.code !== 'unrecognized_keys' || !issue.keys) return issue.message;
  return `unknown key${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${String(k)}"`).join(', ')}`;
}
