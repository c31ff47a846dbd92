/** The Steering tab's sentences for the harness's data (web/src/tabs/steering/words.ts). */
import { describe, expect, it } from 'vitest';
import { delta, directiveWindow, gateSentence, pathOf, remainingSentence } from '../../web/src/tabs/steering/words.js';

describe('steering tab words', () => {
  it('says what the gate did and why', () => {
    expect(gateSentence({ forwarded: false, reasons: [], queued: 1, threshold: 3 })).toBe('Held 1 change (it forwards at 3).');
    expect(gateSentence({ forwarded: false, reasons: [], queued: 2, threshold: 3 })).toBe('Held 2 changes (it forwards at 3).');
    expect(gateSentence({ forwarded: true, reasons: ['threshold'], queued: 3, threshold: 3 })).toBe('Forwarded 3 changes for review: enough changes queued.');
    expect(gateSentence({ forwarded: true, reasons: ['escalation', 'cron'], queued: 1, threshold: 3 })).toBe(
      'Forwarded 1 change for review: the reasoning tier flagged something critical, and a scheduled review was due.',
    );
  });

  it('names the cycles a directive steers and what is left of it', () => {
    expect(directiveWindow({ cycle: 2, expires_at_cycle: 4 })).toBe('cycles 3–4');
    expect(directiveWindow({ cycle: 2, expires_at_cycle: 3 })).toBe('cycle 3');
    expect(remainingSentence({ remaining_cycles: 2, status: 'active' })).toBe('2 cycles left');
    expect(remainingSentence({ remaining_cycles: 1, status: 'superseded' })).toBe('1 cycle left');
    expect(remainingSentence({ remaining_cycles: 0, status: 'expired' })).toBe('expired');
  });

  it('ends a finished path at END, and shows magnitudes briefly', () => {
    expect(pathOf({ path: ['channel_ingestion'], status: 'done' })).toEqual(['channel_ingestion', 'END']);
    expect(pathOf({ path: ['channel_ingestion'], status: 'running' })).toEqual(['channel_ingestion']);
    expect([delta(1), delta(0.45), delta(0.333333)]).toEqual(['Δ 1.0', 'Δ 0.45', 'Δ 0.33']);
  });
});
