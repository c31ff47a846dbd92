/**
 * A file of a folder source as documents: `.md` and `.txt` are one document each, `.eml` one
 * email, `.mbox` one document per message. Each document's external id is the file's path, plus
 * `#<Message-ID>` for an mbox message (or `#sha:<hash>` when it has none), so ids are stable
 * across syncs and a message removed from an mbox is a document removed.
 *
 * A whole file that cannot be read throws ParseError (the reason); a bad message inside an mbox
 * is skipped on its own and listed, and the others are kept.
 */
import path from 'node:path';
import { sha256Hex } from '../hash.js';
import { parseEmail, type ParsedEmail } from './email.js';
import { splitMbox } from './mbox.js';
import { ParseError, decodeWindows1252 } from './mime.js';

export const SUPPORTED_EXTENSIONS = ['.md', '.txt', '.eml', '.mbox'] as const;
export type SupportedExtension = (typeof SUPPORTED_EXTENSIONS)[number];

export function isSupported(file: string): boolean {
  return (SUPPORTED_EXTENSIONS as readonly string[]).includes(path.extname(file).toLowerCase());
}

export interface ParsedFileDocument {
  /** Appended to the file's path to make the external id: '' for a file's only document. */
  suffix: string;
  source_kind: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
}

export interface ParsedFile {
  documents: ParsedFileDocument[];
  /** Parts skipped inside the file (an mbox's bad messages): `#<n>` and why. */
  skipped: { part: string; reason: string }[];
}

const MAX_ID_CHARS = 300;

/** `relPath` is `/`-separated, relative to the source's folder. */
export function parseFile(relPath: string, bytes: Buffer): ParsedFile {
  const ext = path.extname(relPath).toLowerCase();
  switch (ext) {
    case '.md':
    case '.txt': {
      const text = readText(bytes);
      const title = ext === '.md' ? (markdownTitle(text) ?? stem(relPath)) : stem(relPath);
      return { documents: [{ suffix: '', source_kind: 'file', title, body: text, metadata: { path: relPath, format: ext.slice(1) } }], skipped: [] };
    }
    case '.eml': {
      const email = parseEmail(bytes.toString('latin1'));
      return { documents: [emailDocument(email, '', relPath, 'eml')], skipped: [] };
    }
    case '.mbox': {
      const documents: ParsedFileDocument[] = [];
      const skipped: ParsedFile['skipped'] = [];
      const seen = new Map<string, number>();
      for (const message of splitMbox(bytes.toString('latin1'))) {
        let email: ParsedEmail;
        try {
          email = parseEmail(message.raw);
        } catch (err) {
          if (!(err instanceof ParseError)) throw err;
          skipped.push({ part: `#${message.index}`, reason: err.message });
          continue;
        }
        const base = email.messageId ? email.messageId.slice(0, MAX_ID_CHARS) : `sha:${sha256Hex(Buffer.from(message.raw, 'latin1')).slice(0, 16)}`;
        const n = (seen.get(base) ?? 0) + 1;
        seen.set(base, n);
        documents.push(emailDocument(email, `#${base}${n > 1 ? `~${n}` : ''}`, relPath, 'mbox'));
      }
      return { documents, skipped };
    }
    default:
      throw new ParseError(`unsupported file type "${ext}" (supported: ${SUPPORTED_EXTENSIONS.join(', ')})`);
  }
}

/** An email as a document: sender, recipients and date lead the body; the headers are its metadata. */
export function emailDocument(email: ParsedEmail, suffix: string, relPath: string, format: 'eml' | 'mbox' | 'imap'): ParsedFileDocument {
  const from = email.from.name && email.from.address ? `${email.from.name} <${email.from.address}>` : (email.from.address ?? email.from.name);
  // Sender, recipients and date lead the body so recall finds a message by who wrote it.
  const lines = [from && `From: ${from}`, email.to && `To: ${email.to}`, email.cc && `Cc: ${email.cc}`, email.date && `Date: ${email.date}`].filter(Boolean);
  const metadata: Record<string, unknown> = { path: relPath, format };
  const put = (key: string, value: unknown) => {
    if (value !== null && value !== undefined && !(Array.isArray(value) && value.length === 0)) metadata[key] = value;
  };
  put('subject', email.subject);
  put('from', from);
  put('from_name', email.from.name);
  put('from_address', email.from.address);
  put('to', email.to);
  put('cc', email.cc);
  put('date', email.date);
  put('message_id', email.messageId);
  put('attachments', email.attachments);
  return {
    suffix,
    source_kind: 'email',
    title: email.subject ?? '(no subject)',
    body: [...lines, '', email.text].join('\n').trim(),
    metadata,
  };
}

/** UTF-8 text (BOM dropped); not UTF-8 is read as Windows-1252; NUL bytes mean a binary file. */
function readText(bytes: Buffer): string {
  if (bytes.includes(0)) throw new ParseError('binary data (NUL bytes) in a text file');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    text = decodeWindows1252(bytes);
  }
  return text.replace(/^\ufeff/, '').replace(/\r\n/g, '\n');
}

/** A front-matter `title:` or the first `# ` heading. */
function markdownTitle(text: string): string | undefined {
  const front = /^---\n([\s\S]*?)\n---/.exec(text);
  const fm = front && /^title:\s*["']?(.+?)["']?\s*$/m.exec(front[1]!);
  if (fm) return fm[1]!.trim();
  const heading = /^#\s+(.+?)\s*#*\s*$/m.exec(text);
  return heading ? heading[1]!.trim() : undefined;
}

function stem(relPath: string): string {
  return path.posix.basename(relPath).replace(/\.[^.]+$/, '');
}
