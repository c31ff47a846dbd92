/** Cron schedules in words on the page (web/src/ui/cron-words.ts); a shape it does not know stays the expression. */
import { describe, expect, it } from 'vitest';
import { cronInWords } from '../../web/src/ui/cron-words.js';

describe('cronInWords', () => {
  it('says the usual shapes in words', () => {
    expect(cronInWords('30 8 * * 1-5')).toBe('weekdays at 08:30');
    expect(cronInWords('0 9 * * *')).toBe('every day at 09:00');
    expect(cronInWords('0 18 * * 0,6')).toBe('weekends at 18:00');
    expect(cronInWords('0 9 * * 1')).toBe('Mondays at 09:00');
    expect(cronInWords('15 7 * * 1,3,5')).toBe('Mondays, Wednesdays and Fridays at 07:15');
    expect(cronInWords('0 9 * * 7')).toBe('Sundays at 09:00');
    expect(cronInWords('0 9 1 * *')).toBe('on day 1 of each month at 09:00');
    expect(cronInWords('0 12 24 12 *')).toBe('every December 24 at 12:00');
    expect(cronInWords('*/15 * * * *')).toBe('every 15 minutes');
    expect(cronInWords('0 * * * *')).toBe('every hour');
    expect(cronInWords('5 * * * *')).toBe('every hour at :05');
    expect(cronInWords('0 */2 * * *')).toBe('every 2 hours');
    expect(cronInWords('* * * * *')).toBe('every minute');
  });

  it('gives no words for a shape it does not know, rather than wrong ones', () => {
    for (const expr of ['0 9-17 * * *', '0 9 1 * 1', '0 9 * 1-6 *', '61 9 * * *', '0 9 * * 8', 'L 9 * * *', '0 9 * *', '@daily', '0 0 9 * * 1'])
      expect(cronInWords(expr), expr).toBeNull();
  });
});
