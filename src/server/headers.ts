/**
 * Headers every response carries. The page loads only its own files (`web/dist`: one module
 * script and one stylesheet, no inline script or style; React sets style properties through the
 * DOM, which CSP allows), talks only to its own origin (`/rpc`, `/events`), and its favicon is a
 * `data:` URL. No other site may frame it (clickjacking the approve buttons), browsers must not
 * guess content types, and no `Referer` leaves it (the first URL carries the token).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export function setSecurityHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) headers.set(name, value);
}
