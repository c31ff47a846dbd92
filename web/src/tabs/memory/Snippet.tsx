/**
 * A recall snippet with its matches marked: text nodes and <mark> elements only, from the
 * passage and the match offsets the daemon sends. Nothing in a document is ever read as HTML,
 * and a document's own `**` stays text.
 */
import type { ReactNode } from 'react';

export function Snippet(props: { text: string; highlights: ReadonlyArray<readonly [number, number]> }) {
  const { text } = props;
  const parts: ReactNode[] = [];
  let at = 0;
  for (const [rawStart, rawEnd] of props.highlights) {
    const start = Math.max(at, Math.min(text.length, rawStart));
    const end = Math.max(start, Math.min(text.length, rawEnd));
    if (end === start) continue;
    if (start > at) parts.push(text.slice(at, start));
    parts.push(<mark key={start}>{text.slice(start, end)}</mark>);
    at = end;
  }
  if (at < text.length) parts.push(text.slice(at));
  return <>{parts}</>;
}
