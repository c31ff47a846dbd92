/**
 * A plain-text model reply is cut at {@link MAX_REPLY_CHARS} characters, with a note saying so.
 * Replies are stored (the activity log, run results) and shown on the page; a model that loops
 * or a server that streams without end must not fill the database or the page. 32,000
 * characters is about 8,000 tokens at 4 characters a token: far more than any task's answer
 * needs, and well under what a page shows comfortably. Structured replies (`object()`) are not
 * cut: they are parsed whole and fail closed.
 */
export const MAX_REPLY_CHARS = 32_000;

export function capReply(text: string, max = MAX_REPLY_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  // Never split a surrogate pair (an emoji would become a broken character).
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  const dropped = text.length - end;
  return `${text.slice(0, end)}\n\n[reply cut: the model wrote ${text.length.toLocaleString('en-US')} characters; only the first ${end.toLocaleString('en-US')} are kept (${dropped.toLocaleString('en-US')} dropped)]`;
}
