/**
 * One email message (RFC 5322 + MIME) as the text a person would read: subject, sender, date,
 * recipients, and the body from the text/plain part (or the text/html part, stripped, when there
 * is no plain one). Attachments are named; with `textAttachments`, a text one (text/plain,
 * text/csv, text/markdown, …) is read too and follows the body under its name.
 *
 * A message is corrupt — a ParseError saying why — when it has no header block, none of From,
 * Subject, Date or Message-ID, a multipart body without its boundary, or a text part whose
 * base64 does not decode. Anything merely odd (an unknown charset, a malformed encoded word) is
 * read as well as it can be.
 */
import { htmlToText } from './html.js';
import {
  HeaderList,
  ParseError,
  decodeBytes,
  decodeHeaderValue,
  decodeTransfer,
  parseAddress,
  parseHeaderBlock,
  parseParams,
  splitMessage,
  type Address,
} from './mime.js';

export interface ParsedEmail {
  subject: string | null;
  from: Address;
  to: string | null;
  cc: string | null;
  /** ISO 8601, or null when absent or unreadable. */
  date: string | null;
  messageId: string | null;
  text: string;
  attachments: string[];
}

export interface ParseEmailOptions {
  /** Read text attachments into `text` (each under a `--- Attachment: name ---` line). */
  textAttachments?: boolean | undefined;
}

const MAX_DEPTH = 12;

/** Parse a message given as a binary string (latin1, one char per byte). */
export function parseEmail(raw: string, opts: ParseEmailOptions = {}): ParsedEmail {
  if (raw.trim() === '') throw new ParseError('empty message');
  // An .eml saved from an mbox may keep its `From ` separator line.
  const text = raw.startsWith('From ') ? raw.slice(raw.indexOf('\n') + 1) : raw;
  if (/^\r?\n/.test(text)) throw new ParseError('no header block: the message starts with an empty line');
  const { headers: headerText, body } = splitMessage(text);
  const headers = parseHeaderBlock(headerText);
  if (!['from', 'subject', 'date', 'message-id'].some((h) => headers.has(h))) {
    throw new ParseError('not an email: none of From, Subject, Date or Message-ID is present');
  }
  const found: Found = { plain: [], html: [], attachments: [], texts: opts.textAttachments ? [] : null };
  walk(headers, body, 0, found);
  const plain = found.plain.map((t) => t.trim()).filter(Boolean);
  const mainText = plain.length ? plain.join('\n\n') : found.html.map(htmlToText).filter(Boolean).join('\n\n');
  const attached = (found.texts ?? []).filter((t) => t.text.trim()).map((t) => `--- Attachment: ${t.name} ---\n${t.text.trim()}`);
  const bodyText = [mainText, ...attached].filter(Boolean).join('\n\n');
  const header = (name: string) => {
    const v = headers.get(name);
    return v === undefined ? null : decodeHeaderValue(v).trim() || null;
  };
  return {
    subject: header('subject'),
    from: parseAddress(headers.get('from') ?? ''),
    to: header('to'),
    cc: header('cc'),
    date: parseDate(headers.get('date')),
    messageId: (headers.get('message-id') ?? '').trim().replace(/^<|>$/g, '') || null,
    text: bodyText.replace(/\r\n/g, '\n'),
    attachments: found.attachments,
  };
}

interface Found {
  plain: string[];
  html: string[];
  attachments: string[];
  /** Text attachments' contents, when asked for (null: named only). */
  texts: { name: string; text: string }[] | null;
}

function walk(headers: HeaderList, body: string, depth: number, found: Found): void {
  if (depth > MAX_DEPTH) throw new ParseError(`MIME parts nested deeper than ${MAX_DEPTH}`);
  const type = parseParams(headers.get('content-type') ?? 'text/plain');
  const kind = type.value || 'text/plain';
  const disposition = parseParams(headers.get('content-disposition'));
  const filename = disposition.params.filename ?? type.params.name;

  if (kind.startsWith('multipart/')) {
    const boundary = type.params.boundary;
    if (!boundary) throw new ParseError(`a ${kind} part has no boundary parameter`);
    const parts = splitMultipart(body, boundary);
    if (kind === 'multipart/alternative') {
      // The same content several ways: keep the first plain and the first html version.
      const versions = parts.map((p) => {
        const f: Found = { plain: [], html: [], attachments: [], texts: found.texts && [] };
        walk(p.headers, p.body, depth + 1, f);
        return f;
      });
      const plain = versions.find((v) => v.plain.some((t) => t.trim()));
      const html = versions.find((v) => v.html.some((t) => t.trim()));
      if (plain) found.plain.push(...plain.plain);
      else if (html) found.html.push(...html.html);
      for (const v of versions) {
        found.attachments.push(...v.attachments);
        if (v.texts) found.texts?.push(...v.texts);
      }
      return;
    }
    for (const p of parts) walk(p.headers, p.body, depth + 1, found);
    return;
  }
  if (disposition.value === 'attachment' || (filename && !kind.startsWith('text/'))) {
    found.attachments.push(filename ?? kind);
    if (found.texts && kind.startsWith('text/') && kind !== 'text/html')
      found.texts.push({ name: filename ?? kind, text: decodeText(headers, body, kind, type.params.charset) });
    return;
  }
  if (kind === 'message/rfc822') {
    const inner = splitMessage(body);
    walk(parseHeaderBlock(inner.headers), inner.body, depth + 1, found);
    return;
  }
  if (kind === 'text/plain' || kind === 'text/html') {
    (kind === 'text/plain' ? found.plain : found.html).push(decodeText(headers, body, kind, type.params.charset));
    return;
  }
  found.attachments.push(filename ?? kind);
}

function decodeText(headers: HeaderList, body: string, kind: string, charset: string | undefined): string {
  let bytes: Buffer;
  try {
    bytes = decodeTransfer(body, headers.get('content-transfer-encoding'));
  } catch (err) {
    throw new ParseError(`the ${kind} part cannot be decoded: ${(err as Error).message}`);
  }
  return decodeBytes(bytes, charset);
}

interface Part {
  headers: HeaderList;
  body: string;
}

/** The body parts between `--boundary` lines (preamble and epilogue dropped). */
function splitMultipart(body: string, boundary: string): Part[] {
  const delimiter = `--${boundary}`;
  const lines = body.split(/\r?\n/);
  const parts: string[][] = [];
  let current: string[] | null = null;
  let closed = false;
  for (const line of lines) {
    const trimmed = line.replace(/[ \t]+$/, '');
    if (trimmed === delimiter || trimmed === `${delimiter}--`) {
      if (current) parts.push(current);
      if (trimmed !== delimiter) {
        closed = true;
        current = null;
        break;
      }
      current = [];
      continue;
    }
    current?.push(line);
  }
  if (current && !closed) parts.push(current);
  if (parts.length === 0) throw new ParseError(`the multipart boundary "${boundary.slice(0, 70)}" never appears in the body`);
  return parts.map((p) => {
    const text = p.join('\n');
    if (text.startsWith('\n') || text === '') return { headers: new HeaderList([]), body: text.slice(1) };
    const { headers, body: partBody } = splitMessage(text);
    return { headers: parseHeaderBlock(headers), body: partBody };
  });
}

function parseDate(value: string | undefined): string | null {
  if (!value) return null;
  const clean = value
    .replace(/\([^)]*\)/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const ms = Date.parse(clean);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}
