/**
 * The seed's ActionableItem, as the model must return it: a JSON array of items. Sources are
 * matched case- and separator-insensitively against `SOURCE_ALIASES` (the seed's integration
 * mapping — gmail → email, telegram → telegram, notion → system, google_calendar → calendar —
 * plus the common names below); any other source name (slack, jira, …) is kept as `system`, its
 * name becoming the label when the model gave none, so no item is dropped and no reply fails for
 * it. A source that is not a string, or an unknown priority, still fails the reply closed, like
 * any malformed output. Text fields come from memory (untrusted): made one line, control
 * prefixes and fence tags removed, capped. A reply with more than 20 items is cut to the first 20
 * before its items are validated (what is dropped cannot fail the run).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { cleanLine } from '../../llm/fence.js';
import {
  ACTIONABLE_PRIORITIES,
  ACTIONABLE_SOURCES,
  MAX_ACTIONABLES_PER_RUN,
  type ActionablePriority,
  type ActionableSource,
  type SourceDocumentRef,
} from '../../protocol/conscious.js';

/**
 * Source names the model may use, and what they mean: each source value as itself, the seed's
 * integration mapping, and common names of the same things. Anything else is `system`
 * (`UNKNOWN_SOURCE`).
 */
export const SOURCE_ALIASES: Readonly<Record<string, ActionableSource>> = {
  ...Object.fromEntries(ACTIONABLE_SOURCES.map((s) => [s, s])),
  // The seed's mapping.
  gmail: 'email',
  telegram: 'telegram',
  notion: 'system',
  google_calendar: 'calendar',
  // Common names.
  mail: 'email',
  e_mail: 'email',
  outlook: 'email',
  gcal: 'calendar',
  calendar_event: 'calendar',
  tg: 'telegram',
  insight: 'ai_insight',
  ai: 'ai_insight',
  trade: 'trading',
  security_alert: 'security',
};

/** Where a source name that no alias knows goes. */
export const UNKNOWN_SOURCE: ActionableSource = 'system';

/** What a source is called when the model gives no label. */
export const DEFAULT_SOURCE_LABELS: Readonly<Record<ActionableSource, string>> = {
  email: 'Email',
  calendar: 'Calendar',
  telegram: 'Telegram',
  ai_insight: 'AI insight',
  system: 'System',
  trading: 'Trading',
  security: 'Security',
};

export const TITLE_MAX = 120;
const DESCRIPTION_MAX = 500;
const LABEL_MAX = 60;
const SOURCE_REF_MAX = 16;

const key = (v: unknown) =>
  typeof v === 'string'
    ? v
        .trim()
        .toLowerCase()
        .replace(/[\s-]+/g, '_')
    : v;

/** An unknown source's name becomes the label when the model gave none (it is mapped to `system` below). */
function labelUnknownSource(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const item = v as Record<string, unknown>;
  const k = key(item.source);
  if (typeof k !== 'string' || k in SOURCE_ALIASES) return v;
  const label = typeof item.source_label === 'string' && item.source_label.trim() ? item.source_label : String(item.source).trim();
  return { ...item, source_label: label };
}

const fields = z.object({
  // `overwrite` (not `transform`) keeps these strings in the JSON Schema the model is shown.
  title: z
    .string()
    .overwrite((t) => cleanLine(t, TITLE_MAX))
    .min(1, 'must not be empty')
    .describe('Short descriptive title (under 80 chars)'),
  description: z
    .string()
    .overwrite((t) => cleanLine(t, DESCRIPTION_MAX))
    .describe('1-2 sentence explanation with context'),
  source: z.preprocess((v) => {
    const k = key(v);
    return typeof k === 'string' ? (SOURCE_ALIASES[k] ?? UNKNOWN_SOURCE) : k;
  }, z.enum(ACTIONABLE_SOURCES)),
  priority: z.preprocess(key, z.enum(ACTIONABLE_PRIORITIES)),
  actionable: z.boolean(),
  requires_confirmation: z.boolean(),
  has_complex_action: z.boolean(),
  source_label: z
    .string()
    .overwrite((t) => cleanLine(t, LABEL_MAX))
    .describe('Human-readable source name (e.g. Gmail, Telegram, Notion)'),
  // Required in the JSON Schema (strict mode stays possible), but a reply without it (a
  // workspace prompt that does not ask for it) parses as null: it only helps find the document.
  source_ref: z
    .preprocess((v) => (typeof v === 'string' && v.trim() ? cleanLine(v, SOURCE_REF_MAX) : typeof v === 'number' ? String(v) : null), z.string().nullable())
    .describe('The number of the document it came from (e.g. "2.3"), or null'),
});

const itemSchema = z.preprocess(labelUnknownSource, fields);

/** How many items the reply being parsed had before the cut (parsing is synchronous: set and read within one parse). */
let returned = 0;

/**
 * The reply, cut to the seed's 20 before its items are validated: an item the run drops anyway
 * (a malformed 21st) must not fail the run. The parsed array carries the length it came with.
 */
export const actionablesReplySchema = z
  .preprocess((v) => {
    if (!Array.isArray(v)) return v;
    returned = v.length;
    return v.slice(0, MAX_ACTIONABLES_PER_RUN);
  }, z.array(itemSchema))
  .overwrite((items) => Object.assign(items, { returned }));

export type ActionablesReply = z.output<typeof actionablesReplySchema> & { returned?: number };

export interface ExtractedActionable {
  id: string;
  title: string;
  description: string;
  source: ActionableSource;
  priority: ActionablePriority;
  actionable: boolean;
  requires_confirmation: boolean;
  has_complex_action: boolean;
  source_label: string;
  /** The document number the model cited (`2.3`, prompt.ts `documentRef`): a hint, checked in source-match.ts. */
  source_ref?: string | null;
  /** The recalled document it came from (source-match.ts); absent: not matched (yet). */
  source_document?: SourceDocumentRef | null;
}

/** sha256 of `title:source`, hex: the same item extracted again is the same row. */
export function actionableId(title: string, source: string): string {
  return createHash('sha256').update(`${title}:${source}`).digest('hex');
}

/**
 * The parsed reply as rows: cut to 20 (the seed's limit), ids computed, duplicates within the
 * reply merged (the first wins; the seed asks the model to merge them itself).
 */
export function toActionables(reply: ActionablesReply): { items: ExtractedActionable[]; cut: number } {
  const kept = reply.slice(0, MAX_ACTIONABLES_PER_RUN);
  const seen = new Set<string>();
  const items: ExtractedActionable[] = [];
  for (const r of kept) {
    const id = actionableId(r.title, r.source);
    if (seen.has(id)) continue;
    seen.add(id);
    items.push({ ...r, id, source_label: r.source_label || DEFAULT_SOURCE_LABELS[r.source] });
  }
  return { items, cut: (reply.returned ?? reply.length) - kept.length };
}
