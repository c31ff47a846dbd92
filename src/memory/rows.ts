/** Reading stored JSON back: metadata that is not a JSON object reads as `{}` rather than failing a listing. */
export function parseMetadata(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
