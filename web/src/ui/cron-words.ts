/**
 * A task's cron schedule in words for the page ("weekdays at 08:30"), for the shapes people
 * write; anything else stays the expression itself (shown with "cron"), never a wrong sentence.
 * Five fields: minute hour day-of-month month day-of-week (0 or 7 = Sunday).
 */
const DAYS = ['Sundays', 'Mondays', 'Tuesdays', 'Wednesdays', 'Thursdays', 'Fridays', 'Saturdays'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const num = (field: string, min: number, max: number): number | null => {
  if (!/^\d{1,2}$/.test(field)) return null;
  const n = Number(field);
  return n >= min && n <= max ? n : null;
};

function days(field: string): string | null {
  if (field === '*') return 'every day';
  if (field === '1-5') return 'weekdays';
  if (field === '0,6' || field === '6,0' || field === '6,7' || field === '6-7') return 'weekends';
  const list = field.split(',').map((d) => num(d, 0, 7));
  if (list.some((d) => d === null)) return null;
  const names = [...new Set(list.map((d) => DAYS[d! % 7]!))];
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0]!;
}

const time = (h: number, m: number) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;

/** Words for a cron expression (without the `cron:` prefix), or null when it is not a shape it knows. */
export function cronInWords(expr: string): string | null {
  const f = expr.trim().split(/\s+/);
  if (f.length !== 5) return null;
  const [min, hour, dom, month, dow] = f as [string, string, string, string, string];
  const every = /^\*\/(\d{1,2})$/;
  if (dom === '*' && month === '*' && dow === '*') {
    if (min === '*' && hour === '*') return 'every minute';
    const step = every.exec(min);
    if (step && hour === '*') return Number(step[1]) === 1 ? 'every minute' : `every ${Number(step[1])} minutes`;
    const m = num(min, 0, 59);
    if (m !== null && hour === '*') return m === 0 ? 'every hour' : `every hour at :${String(m).padStart(2, '0')}`;
    const hstep = every.exec(hour);
    if (m !== null && hstep) return `every ${Number(hstep[1])} hours${m ? ` at :${String(m).padStart(2, '0')}` : ''}`;
  }
  const m = num(min, 0, 59);
  const h = num(hour, 0, 23);
  if (m === null || h === null) return null;
  const at = `at ${time(h, m)}`;
  if (month === '*' && dom === '*') {
    const d = days(dow);
    return d ? `${d} ${at}` : null;
  }
  const day = num(dom, 1, 31);
  if (day === null || dow !== '*') return null;
  if (month === '*') return `on day ${day} of each month ${at}`;
  const mo = num(month, 1, 12);
  return mo === null ? null : `every ${MONTHS[mo - 1]} ${day} ${at}`;
}
