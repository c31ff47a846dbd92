/**
 * The parts of RFC 5322 / MIME an email source needs, with no dependency: header blocks
 * (unfolding), RFC 2047 encoded words, RFC 6532 raw UTF-8 headers, Content-Type parameters
 * (quoted strings, RFC 2231 continuations and charsets), quoted-printable, base64 and charsets.
 *
 * Messages are handled as "binary strings" (latin1: one char per byte) until a part's bytes are
 * decoded with its charset, so no byte is lost to an early, wrong decoding.
 */

/** A file or message that cannot be read as what it claims to be; `message` is the reason. */
export class ParseError extends Error {
  override readonly name = 'ParseError';
}

export interface HeaderField {
  /** As written (case kept). */
  name: string;
  /** Unfolded, still encoded (a binary string). */
  value: string;
}

export class HeaderList {
  constructor(readonly fields: HeaderField[]) {}

  get(name: string): string | undefined {
    const lower = name.toLowerCase();
    return this.fields.find((f) => f.name.toLowerCase() === lower)?.value;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}

const HEADER_LINE = /^([!-9;-~]+):[ \t]*(.*)$/;
const MAX_HEADER_LINES = 5000;

/** Split a message (binary string) at the first empty line. */
export function splitMessage(raw: string): { headers: string; body: string } {
  const m = /\r?\n\r?\n/.exec(raw);
  if (!m) return { headers: raw, body: '' };
  return { headers: raw.slice(0, m.index), body: raw.slice(m.index + m[0].length) };
}

/** Parse a header block; throws ParseError on a line that is neither a header nor a continuation. */
export function parseHeaderBlock(text: string): HeaderList {
  const lines = text.split(/\r?\n/);
  const fields: HeaderField[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    if (i > MAX_HEADER_LINES) throw new ParseError(`more than ${MAX_HEADER_LINES} header lines`);
    if (line.includes('\0')) throw new ParseError(`binary data in the header block (line ${i + 1})`);
    if (/^[ \t]/.test(line)) {
      const last = fields[fields.length - 1];
      if (!last) throw new ParseError('the header block starts with a continuation line');
      last.value += ` ${line.trim()}`;
      continue;
    }
    const m = HEADER_LINE.exec(line);
    if (!m) throw new ParseError(`line ${i + 1} of the header block is not a "Name: value" header: ${JSON.stringify(line.slice(0, 60))}`);
    fields.push({ name: m[1]!, value: m[2]!.trim() });
  }
  return new HeaderList(fields);
}

// ---- header values ------------------------------------------------------------------------

const ENCODED_WORD = /=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=/g;
const BETWEEN_WORDS = /(=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)/g;

/**
 * A header value as text: raw 8-bit bytes read as UTF-8 (RFC 6532) when they are valid UTF-8,
 * then RFC 2047 encoded words decoded (whitespace between adjacent encoded words dropped).
 * A malformed encoded word is left as written rather than failing the message.
 */
export function decodeHeaderValue(value: string): string {
  const text = /[\x80-\xff]/.test(value) ? rawHeaderText(value) : value;
  return text.replace(BETWEEN_WORDS, '$1').replace(ENCODED_WORD, (word, charset: string, encoding: string, data: string) => {
    try {
      const bytes = encoding.toUpperCase() === 'B' ? decodeBase64(data) : decodeQEncoding(data);
      return decodeBytes(bytes, charset.split('*')[0]!);
    } catch {
      return word;
    }
  });
}

/** Raw 8-bit header bytes: UTF-8 when they are valid UTF-8, else Windows-1252 (old mailers). */
function rawHeaderText(value: string): string {
  const bytes = Buffer.from(value, 'latin1');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return decodeWindows1252(bytes);
  }
}

function decodeQEncoding(data: string): Buffer {
  return decodeQuotedPrintable(data.replace(/_/g, ' '));
}

export interface Address {
  name: string | null;
  address: string | null;
}

/** The first mailbox of an address header: `Name <a@b>`, `a@b (Name)` or `a@b`. */
export function parseAddress(value: string): Address {
  const text = decodeHeaderValue(value).trim();
  const angle = /^(.*?)<([^<>]*)>/.exec(text);
  if (angle) {
    const name = unquote(angle[1]!.trim());
    return { name: name || null, address: angle[2]!.trim() || null };
  }
  const paren = /^([^\s()]+@[^\s()]+)\s*\((.*)\)/.exec(text);
  if (paren) return { name: paren[2]!.trim() || null, address: paren[1]! };
  const bare = /[^\s,;]+@[^\s,;]+/.exec(text);
  return bare ? { name: null, address: bare[0] } : { name: text || null, address: null };
}

function unquote(s: string): string {
  return s.startsWith('"') && s.endsWith('"') && s.length >= 2 ? s.slice(1, -1).replace(/\\(.)/g, '$1') : s;
}

export interface ParamValue {
  /** The value before the first `;`, lower-cased (`text/plain`, `attachment`). */
  value: string;
  /** Parameter names lower-cased; RFC 2231 continuations joined and decoded. */
  params: Record<string, string>;
}

/** `text/plain; charset="utf-8"; format=flowed` → value and params. */
export function parseParams(header: string | undefined): ParamValue {
  if (!header) return { value: '', params: {} };
  const parts = splitParams(header);
  const value = (parts.shift() ?? '').trim().toLowerCase();
  const simple: Record<string, string> = {};
  const extended = new Map<string, { index: number; encoded: boolean; text: string }[]>();
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const rawName = part.slice(0, eq).trim().toLowerCase();
    const val = unquote(part.slice(eq + 1).trim());
    const m = /^([^*]+)(?:\*(\d+))?(\*)?$/.exec(rawName);
    if (!m) continue;
    const [, name, index, star] = m;
    if (index === undefined && !star) {
      // Mailers often put RFC 2047 words or raw UTF-8 in a plain parameter (a filename).
      simple[name!] = decodeHeaderValue(val);
      continue;
    }
    const list = extended.get(name!) ?? [];
    list.push({ index: index === undefined ? 0 : Number(index), encoded: !!star, text: val });
    extended.set(name!, list);
  }
  for (const [name, pieces] of extended) {
    pieces.sort((a, b) => a.index - b.index);
    let charset = 'utf-8';
    const bytes: Buffer[] = [];
    for (const [i, piece] of pieces.entries()) {
      let text = piece.text;
      if (piece.encoded && i === 0) {
        const m = /^([^']*)'[^']*'(.*)$/.exec(text);
        if (m) {
          charset = m[1] || charset;
          text = m[2]!;
        }
      }
      bytes.push(piece.encoded ? percentDecode(text) : Buffer.from(text, 'latin1'));
    }
    simple[name] = decodeBytes(Buffer.concat(bytes), charset);
  }
  return { value, params: simple };
}

function splitParams(header: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const ch = header[i]!;
    if (quoted && ch === '\\' && i + 1 < header.length) {
      cur += ch + header[++i];
      continue;
    }
    if (ch === '"') quoted = !quoted;
    if (ch === ';' && !quoted) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += ch;
  }
  out.push(cur);
  return out;
}

function percentDecode(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '%' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(ch.charCodeAt(0) & 0xff);
  }
  return Buffer.from(bytes);
}

// ---- bodies -------------------------------------------------------------------------------

/** Quoted-printable (RFC 2045 §6.7): soft line breaks removed, `=XX` decoded; a stray `=` is kept. */
export function decodeQuotedPrintable(text: string): Buffer {
  const src = text.replace(/[ \t]+(?=\r?\n)/g, '').replace(/=\r?\n/g, '');
  const bytes = Buffer.alloc(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const ch = src.charCodeAt(i);
    if (ch === 0x3d && i + 2 < src.length && isHex(src.charCodeAt(i + 1)) && isHex(src.charCodeAt(i + 2))) {
      bytes[n++] = Number.parseInt(src.slice(i + 1, i + 3), 16);
      i += 2;
    } else bytes[n++] = ch & 0xff;
  }
  return bytes.subarray(0, n);
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** Base64, strictly: whitespace ignored, anything else outside the alphabet is a ParseError. */
export function decodeBase64(text: string): Buffer {
  const clean = text.replace(/[\s]+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) throw new ParseError('invalid base64 (characters outside the base64 alphabet)');
  if (clean.replace(/=+$/, '').length % 4 === 1) throw new ParseError('invalid base64 (truncated data)');
  return Buffer.from(clean, 'base64');
}

/** Labels the WHATWG Encoding standard reads as Windows-1252 (mail says "iso-8859-1" and means it). */
const WINDOWS_1252_LABELS = new Set(['windows-1252', 'cp1252', 'x-cp1252', 'iso-8859-1', 'iso8859-1', 'latin1', 'l1', 'us-ascii', 'ascii', 'cp819', 'ibm819']);
// Node's decoder reads Windows-1252 as ISO-8859-1: 0x80–0x9F are these characters (0 = unassigned, kept as is).
const CP1252_HIGH = [
  0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0, 0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022,
  0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
];

export function decodeWindows1252(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += String.fromCharCode(b >= 0x80 && b <= 0x9f && CP1252_HIGH[b - 0x80] ? CP1252_HIGH[b - 0x80]! : b);
  return out;
}

/** Bytes as text in a charset; an unknown charset is read as UTF-8 (invalid bytes become U+FFFD). */
export function decodeBytes(bytes: Uint8Array, charset: string | undefined): string {
  const label = (charset ?? 'utf-8').trim().toLowerCase().replace(/^"|"$/g, '') || 'utf-8';
  if (WINDOWS_1252_LABELS.has(label)) return decodeWindows1252(bytes);
  try {
    return new TextDecoder(label).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** A transfer-encoded part body (binary string) as bytes. */
export function decodeTransfer(body: string, encoding: string | undefined): Buffer {
  switch ((encoding ?? '7bit').trim().toLowerCase()) {
    case 'base64':
      return decodeBase64(body);
    case 'quoted-printable':
      return decodeQuotedPrintable(body);
    default:
      return Buffer.from(body, 'latin1');
  }
}
