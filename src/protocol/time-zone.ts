/** An IANA zone this platform's Intl knows (checked the same way in the daemon and the page). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
