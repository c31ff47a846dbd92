/**
 * Seed 3's rows the audit found missing, through the engine's Instance on both dialects against
 * the scripted model server: actionables become `conscious` memory documents with deterministic
 * ids and follow their state; recall reaches past the newest 10 documents of a source within the
 * token budget; reworded and cross-source duplicates merge; one failed memory write warns and
 * the run goes on; the events carry the seed's fields.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { estimateTokens } from '../../../src/llm/index.js';
import { CONSCIOUS_NAMESPACE } from '../../../src/protocol/conscious.js';
import { actionableId, allot, mergeDuplicates, sameItem, titleKey, type ExtractedActionable } from '../../../src/worlds/conscious/index.js';
import { testDialects } from '../../support/stores.js';
import { createConsciousHarness, item, userOf, type ConsciousHarness } from './harness.js';

const dialects = await testDialects();

describe.each(dialects)('conscious actionables in memory (%s)', (dialect) => {
  let h: ConsciousHarness;
  beforeEach(async () => {
    h = await createConsciousHarness({ dialect });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await h.dispose();
  });

  const put = (id: string, title: string, body: string, namespace = 'gmail') =>
    h.memory.storeDocument({ namespace, external_id: id, title, body, source_kind: 'email' });
  const eventsOf = (type: string) => h.events.filter((e) => e.type === type);

  it('a run writes each actionable as a conscious document (id = the actionable id); memory search finds it; state changes follow', async () => {
    await put('m1', 'Invoice', 'Invoice 2291 is overdue.');
    h.server.enqueue({ json: [item('Pay invoice 2291', { priority: 'critical', description: 'Finance asked twice.' }), item('Reply to Anna')] });
    expect((await h.instance.tick()).kind).toBe('committed');
    const pay = actionableId('Pay invoice 2291', 'email');

    const doc = await h.memory.getDocument(CONSCIOUS_NAMESPACE, pay);
    expect(doc).toMatchObject({ title: 'Pay invoice 2291', source_kind: 'actionable', metadata: { kind: 'actionable', priority: 'critical', state: 'new' } });
    expect(doc!.body).toContain('Finance asked twice.');
    expect((await h.memory.namespaces()).find((n) => n.namespace === CONSCIOUS_NAMESPACE)).toMatchObject({ documents: 2, kind: 'conscious' });
    const [listed] = await h.world.service.list({ state: 'new' });
    expect(listed!.memory).toEqual({ namespace: CONSCIOUS_NAMESPACE, external_id: listed!.id });
    expect((await h.memory.recall({ query: 'invoice 2291', namespace: CONSCIOUS_NAMESPACE })).map((r) => r.external_id)).toEqual([pay]);

    // Its own writes wake nothing: the next tick is quiet, and the next run does not read them back.
    expect((await h.instance.tick()).kind).toBe('quiet');
    await h.world.service.complete(pay);
    expect((await h.memory.getDocument(CONSCIOUS_NAMESPACE, pay))!.metadata).toMatchObject({ state: 'done' });
    expect((await h.instance.tick()).kind).toBe('quiet');
    expect(h.extractions()).toHaveLength(1);
    await put('m2', 'Standup', 'Standup moved to 10:00.');
    h.server.enqueue({ json: [] });
    await h.instance.tick();
    const second = userOf(h.extractions()[1]!);
    expect(second).not.toContain('integration: conscious');
    expect(second).toContain('Standup moved');

    // Retention prunes a done item: its document goes with it.
    await h.clock.advance(31 * 86_400_000);
    await put('m3', 'Later', 'Something else.');
    h.server.enqueue({ json: [item('Something else')] });
    await h.instance.tick();
    expect(await h.memory.getDocument(CONSCIOUS_NAMESPACE, pay)).toMatchObject({ deleted_at: expect.any(Number) });
    expect(await h.memory.getDocument(CONSCIOUS_NAMESPACE, actionableId('Something else', 'email'))).toMatchObject({ deleted_at: null });
  });

  it('each actionable names the recalled document it came from (matched by its words, not by the model); a synthesized one names none; its conscious document says so', async () => {
    await put('inv-2291', 'ACME invoice 2291 overdue', 'Invoice 2291 from ACME (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.');
    await h.clock.advance(1000);
    await put('inv-2292', 'ACME invoice 2292', 'Invoice 2292 from ACME is paid. Thank you.');
    await put('standup', 'Standup notes', 'Ana needs the cloud costs for the budget review on Thursday.', 'notes');
    h.server.enqueue({
      json: [
        item('Pay ACME invoice 2291', { description: 'It is 30 days overdue and hosting is suspended on Monday.' }),
        item('Send Ana the cloud costs', { source: 'ai_insight', description: 'For the budget review on Thursday.' }),
        item('Consider a yearly plan', { source: 'ai_insight', description: 'Monthly billing keeps getting late.' }),
      ],
    });
    expect((await h.instance.tick()).kind).toBe('committed');
    const byTitle = new Map((await h.world.service.list()).map((a) => [a.title, a]));
    expect(byTitle.get('Pay ACME invoice 2291')!.source_document).toEqual({ namespace: 'gmail', external_id: 'inv-2291', title: 'ACME invoice 2291 overdue' });
    expect(byTitle.get('Send Ana the cloud costs')!.source_document).toEqual({ namespace: 'notes', external_id: 'standup', title: 'Standup notes' });
    expect(byTitle.get('Consider a yearly plan')!.source_document).toBeNull();
    const doc = await h.memory.getDocument(CONSCIOUS_NAMESPACE, byTitle.get('Pay ACME invoice 2291')!.id);
    expect(doc!.body).toContain('From: ACME invoice 2291 overdue (gmail/inv-2291)');
    expect(doc!.metadata).toMatchObject({ source_document: { namespace: 'gmail', external_id: 'inv-2291' } });

    // Extracted again when its source is no longer recalled: the source found before is kept.
    await h.memory.deleteDocument('gmail', 'inv-2291');
    h.server.enqueue({ json: [item('Pay ACME invoice 2291', { description: 'Still overdue.' })] });
    expect((await h.instance.tick()).kind).toBe('committed');
    expect((await h.world.service.list()).find((a) => a.title === 'Pay ACME invoice 2291')!.source_document).toMatchObject({ external_id: 'inv-2291' });
  });

  it('a reworded item links the document the model cited (### Document n.i), checked against what was recalled; a citation of nothing recalled or of an unrelated document links nothing', async () => {
    await put('inv-2291', 'ACME invoice 2291 overdue', 'Invoice 2291 from ACME (EUR 1,840) is 30 days overdue; hosting is suspended on Monday.');
    await h.clock.advance(1000);
    await put('lunch', 'Team lunch', 'Lunch with the team on Thursday at noon.');
    await put('standup', 'Standup notes', 'Ana needs the cloud costs for the budget review.', 'notes');
    h.server.enqueue({
      json: [
        // Paraphrased: too few of its words are in any document for the word match alone.
        item('Settle the outstanding ACME bill', { description: 'Do it before the hosting gets cut off.', source_ref: '1.2' }),
        item('Book a table for Thursday', { description: 'Somewhere near the office.', source_ref: '9.9' }),
        item('Renew the passport', { description: 'It expires soon.', source_ref: '2.1' }),
      ],
    });
    expect((await h.instance.tick()).kind).toBe('committed');
    const user = userOf(h.extractions()[0]!);
    expect(user).toContain('### Document 1.1');
    expect(user).toContain('### Document 1.2');
    expect(user).toContain('### Document 2.1');
    const byTitle = new Map((await h.world.service.list()).map((a) => [a.title, a]));
    expect(byTitle.get('Settle the outstanding ACME bill')!.source_document).toEqual({
      namespace: 'gmail',
      external_id: 'inv-2291',
      title: 'ACME invoice 2291 overdue',
    });
    expect(byTitle.get('Book a table for Thursday')!.source_document).toBeNull();
    expect(byTitle.get('Renew the passport')!.source_document).toBeNull();
  });

  it('one failed memory insert warns and the run goes on with the others', async () => {
    await put('m1', 'Invoice', 'Invoice 2291 is overdue.');
    const store = h.memory.storeDocument.bind(h.memory);
    vi.spyOn(h.memory, 'storeDocument').mockImplementation(async (input, info) => {
      if (input.namespace === CONSCIOUS_NAMESPACE && input.title === 'Reply to Anna') throw new Error('disk full');
      return store(input, info);
    });
    h.server.enqueue({ json: [item('Pay invoice 2291'), item('Reply to Anna'), item('Book the flight to Lyon')] });
    const outcome = await h.instance.tick();
    expect(outcome).toMatchObject({ kind: 'committed', message: '3 actionables (3 new); 1 not written into memory (see the log)' });
    expect(await h.world.service.list()).toHaveLength(3);
    expect(await h.memory.getDocument(CONSCIOUS_NAMESPACE, actionableId('Pay invoice 2291', 'email'))).toBeDefined();
    expect(await h.memory.getDocument(CONSCIOUS_NAMESPACE, actionableId('Book the flight to Lyon', 'email'))).toBeDefined();
    expect(await h.memory.getDocument(CONSCIOUS_NAMESPACE, actionableId('Reply to Anna', 'email'))).toBeUndefined();
    expect(eventsOf('conscious.completed')[0]!.data).toMatchObject({ actionable_count: 3, insert_failures: 1 });
    expect(eventsOf('conscious.error')).toEqual([]);
  });

  it('a fact in the 25th-newest document of a source reaches the extraction prompt, within the token budget, fenced', async () => {
    for (let i = 30; i >= 1; i--) {
      // i = 1 is the newest; each one a long mail, so the seed's 10 × 1500 characters would not reach the 25th.
      await put(`m${i}`, `Mail ${i}`, `${i === 25 ? 'Contract renewal for Zephyr Ltd is due on 14 March.' : `Newsletter ${i}.`} ${'filler text '.repeat(300)}`);
      await h.clock.advance(1000);
    }
    h.server.enqueue({ json: [] });
    await h.instance.tick();
    const user = userOf(h.extractions()[0]!);
    expect(user).toMatch(/<untrusted-data label="memory gmail">\n"Title: Mail 25\\n.*Contract renewal for Zephyr Ltd is due on 14 March\./);
    expect(user.replace(/<untrusted-data[^>]*>\n".*"\n<\/untrusted-data>/g, '')).not.toContain('Zephyr');
    expect(user.match(/label="memory gmail"/g)).toHaveLength(30);
    expect(estimateTokens(user)).toBeLessThanOrEqual(h.settings.context_budget_tokens);
    // The newest get more than the older ones (depth after breadth).
    const lengthOf = (n: number) => new RegExp(`"Title: Mail ${n}\\\\n[^"]*"`).exec(user)![0].length;
    expect(lengthOf(1)).toBeGreaterThan(lengthOf(30));
  });

  it('a small budget keeps the heads of as many documents as fit and says how many were left out', async () => {
    h.settings.context_budget_tokens = 1000;
    for (let i = 1; i <= 20; i++) await put(`m${i}`, `Mail ${i}`, 'x'.repeat(2000));
    h.server.enqueue({ json: [] });
    await h.instance.tick();
    const user = userOf(h.extractions()[0]!);
    expect(estimateTokens(user)).toBeLessThanOrEqual(1000);
    const shown = user.match(/label="memory gmail"/g)!.length;
    expect(shown).toBeGreaterThan(1);
    expect(user).toContain(`(${20 - shown} older documents of this source left out: over the context budget)`);
  });

  it('a reworded duplicate and the same item from two sources merge into one; its state survives the rewording', async () => {
    await put('m1', 'Invoice', 'Invoice 2291 overdue');
    await h.memory.storeDocument({ namespace: 'telegram', external_id: 't1', title: 'Chat', body: 'Pay invoice 2291 please', source_kind: 'message' });
    h.server.enqueue({
      json: [
        item('Pay invoice 2291', { priority: 'important', source_label: 'Gmail' }),
        item('Pay the invoice #2291', { source: 'telegram', priority: 'critical', source_label: 'Telegram' }),
        item('Pay invoice 2292'),
      ],
    });
    expect(await h.instance.tick()).toMatchObject({ kind: 'committed', message: '2 actionables (2 new); 1 duplicate merged' });
    const first = await h.world.service.list();
    const pay = first.find((a) => a.title === 'Pay invoice 2291')!;
    expect(pay).toMatchObject({ source: 'email', priority: 'critical', source_label: 'Gmail + Telegram' });
    expect(first.map((a) => a.title).sort()).toEqual(['Pay invoice 2291', 'Pay invoice 2292']);
    await h.world.service.dismiss(pay.id);

    // The next run words it differently: the same row, still dismissed, not new.
    await h.clock.advance(5 * 60_000);
    await put('m2', 'Reminder', 'Invoice 2291 still overdue');
    h.server.enqueue({ json: [item('Pay overdue invoices 2291', { description: 'Second reminder.' })] });
    expect(await h.instance.tick()).toMatchObject({ kind: 'committed', message: '1 actionable (0 new)' });
    const second = await h.world.service.list();
    expect(second).toHaveLength(2);
    expect(second.find((a) => a.id === pay.id)).toMatchObject({ state: 'dismissed', title: 'Pay overdue invoices 2291', description: 'Second reminder.' });
    expect(eventsOf('conscious.completed').map((e) => (e.data as { merged: number }).merged)).toEqual([1, 0]);
  });
});

describe('dedup rules', () => {
  const x = (title: string, over: Partial<ExtractedActionable> = {}): ExtractedActionable => ({
    id: actionableId(title, over.source ?? 'email'),
    title,
    description: '',
    source: 'email',
    priority: 'normal',
    actionable: true,
    requires_confirmation: false,
    has_complex_action: false,
    source_label: 'Gmail',
    ...over,
  });
  const same = (a: string, b: string) => sameItem(titleKey(a), titleKey(b));

  it('merges rewordings, never different numbers or unrelated items', () => {
    expect(same('Reply to Anna about the quarterly report', 'Respond to Anna re: quarterly report')).toBe(true);
    expect(same('Pay invoice 2291', 'Pay the invoice #2291 today')).toBe(true);
    expect(same('Pay invoice 2291', 'Pay invoice 2292')).toBe(false);
    expect(same('Item 1', 'Item 11')).toBe(false);
    expect(same('Reply to Anna', 'Reply to Ben')).toBe(false);
    expect(same('Book the flight to Lyon', 'Cancel the hotel in Lyon')).toBe(false);
    expect(same('!!!', '???')).toBe(false);
  });

  it('folds into the first like it: most urgent priority, every label; deterministic', () => {
    const items = [x('Renew the passport'), x('Renew passport', { source: 'calendar', priority: 'critical', source_label: 'Calendar' }), x('Water the plants')];
    const { items: out, merged } = mergeDuplicates(items);
    expect(merged).toBe(1);
    expect(out.map((i) => [i.title, i.priority, i.source_label])).toEqual([
      ['Renew the passport', 'critical', 'Gmail + Calendar'],
      ['Water the plants', 'normal', 'Gmail'],
    ]);
    expect(mergeDuplicates(items)).toEqual({ items: out, merged });
  });

  it('allot gives every document its head before the newest get more', () => {
    expect(allot([1000, 1000, 1000], 3 * 480 + 600, { minChars: 400, maxChars: 1500 })).toEqual([1000, 400, 400]);
    expect(allot([50, 1000], 10_000, { minChars: 400, maxChars: 1500 })).toEqual([50, 1000]);
    expect(allot([1000, 1000, 1000], 2 * 480, { minChars: 400, maxChars: 1500 })).toEqual([400, 400, 0]);
  });
});
