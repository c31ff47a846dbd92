/** Small formatting helpers shared by the tabs. */

export function relativeTime(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return 'never';
  const s = Math.round((now - at) / 1000);
  const future = s < 0;
  const a = Math.abs(s);
  let text: string;
  if (a < 10) return future ? 'in a moment' : 'just now';
  if (a < 60) text = `${a} s`;
  else if (a < 3600) text = `${Math.round(a / 60)} min`;
  else if (a < 86_400) text = `${Math.round(a / 3600)} h`;
  else text = `${Math.round(a / 86_400)} d`;
  return future ? `in ${text}` : `${text} ago`;
}

export function clockTime(at: number, now: number = Date.now()): string {
  const d = new Date(at);
  const sameDay = new Date(now).toDateString() === d.toDateString();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return sameDay ? time : `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}

/** "14:05" in the viewer's zone. */
export function hourMinute(at: number): string {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function fullTime(at: number | null | undefined): string {
  return at === null || at === undefined ? '' : new Date(at).toLocaleString();
}

const numberFormat = new Intl.NumberFormat('en-US');
export function count(n: number): string {
  return numberFormat.format(n);
}

/** 1234 → "1.2k", for chart axes. */
export function compact(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${trim(n / 1000)}k`;
  return `${trim(n / 1_000_000)}M`;
}

function trim(x: number): string {
  return x >= 10 ? String(Math.round(x)) : x.toFixed(1).replace(/\.0$/, '');
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function worldLabel(world: string): string {
  return world.charAt(0).toUpperCase() + world.slice(1);
}

/** A world's interval in words: "every 30 seconds", "every minute", "every 5 minutes", "every 2 hours". */
export function everyWords(minutes: number): string {
  if (minutes < 1) {
    const s = Math.round(minutes * 60);
    return `every ${s} second${s === 1 ? '' : 's'}`;
  }
  if (minutes % 60 === 0) {
    const h = minutes / 60;
    return h === 1 ? 'every hour' : `every ${h} hours`;
  }
  return minutes === 1 ? 'every minute' : `every ${minutes} minutes`;
}
