/** Small text helpers the offline stand-ins and the renderers share. */

const STOPWORDS = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have how i if in into is it its just me my no not of on or our ' +
    'please so some than that the their them then there these they this to up us was we were what when where which who why will with would you ' +
    'your about after again all also any because before being both each few more most other over same should such too very handle resolve request ' +
    'reply channel message'
  ).split(' '),
);

/** Lower-case content words (3+ characters, no stopwords), first occurrence order. */
export function keyTerms(text: string): string[] {
  const seen = new Set<string>();
  for (const m of text.toLowerCase().matchAll(/[a-z0-9][a-z0-9_-]{2,}/g)) {
    const w = m[0].replace(/[-_]+$/, '');
    if (w.length >= 3 && !STOPWORDS.has(w)) seen.add(w);
  }
  return [...seen];
}

/** One line, whitespace collapsed, at most `max` characters (with an ellipsis). */
export function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

/** The first sentence (or line) of a text, at most `max` characters. */
export function firstSentence(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const m = /^(.+?[.!?])(\s|$)/.exec(flat);
  return oneLine(m ? m[1]! : flat, max);
}

export { plural } from '../core/index.js';
