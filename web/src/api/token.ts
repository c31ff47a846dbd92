/**
 * The bearer token for this browser tab. `subconscious start` prints `/?token=…`; we keep the
 * token in sessionStorage (this tab only, gone when it closes) and take it out of the address
 * bar so it does not land in history, bookmarks or screenshots.
 */
const KEY = 'subconscious.token';

let current: string | null = null;

/** Read `?token=` once at start, store it, and strip it from the visible URL. */
export function captureToken(): string | null {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null) {
    url.searchParams.delete('token');
    window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
    if (fromUrl.trim()) setToken(fromUrl.trim());
  }
  current ??= readStored();
  return current;
}

export function getToken(): string | null {
  return current;
}

export function setToken(token: string): void {
  current = token;
  try {
    window.sessionStorage.setItem(KEY, token);
  } catch {
    // storage disabled: the token lives for this page load only
  }
}

export function clearToken(): void {
  current = null;
  try {
    window.sessionStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}

function readStored(): string | null {
  try {
    return window.sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}
