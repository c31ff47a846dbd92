/**
 * An mbox file as its messages. A message starts at a `From ` line that opens the file or
 * follows an empty line (so an unescaped "From " inside a paragraph does not split a message);
 * `>From ` lines (any number of `>`) lose one `>` (mboxrd), which also reads mboxo correctly.
 */
import { ParseError } from './mime.js';

export interface MboxMessage {
  /** 1-based position in the file. */
  index: number;
  /** The message without its separator line (a binary string). */
  raw: string;
}

export function splitMbox(raw: string): MboxMessage[] {
  const text = raw.replace(/^\ufeff/, '');
  if (!text.startsWith('From ')) throw new ParseError('not an mbox: the first line is not a "From " separator line');
  const lines = text.split('\n');
  const messages: MboxMessage[] = [];
  let current: string[] | null = null;
  const flush = () => {
    if (!current) return;
    // The empty line before the next separator belongs to the separator.
    if (current.length && current[current.length - 1]!.replace(/\r$/, '') === '') current.pop();
    messages.push({ index: messages.length + 1, raw: current.join('\n') });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const separator = line.startsWith('From ') && (i === 0 || lines[i - 1]!.replace(/\r$/, '') === '');
    if (separator) {
      flush();
      current = [];
      continue;
    }
    current!.push(/^>+From /.test(line) ? line.slice(1) : line);
  }
  flush();
  return messages;
}
