/** The fake clock that every time-driven test relies on: order, cancellation, and no leaks. */
import { getEventListeners } from 'node:events';
import { expect, it } from 'vitest';
import { FakeClock, SubconsciousError } from '../../src/core/index.js';

it('wakes sleepers in time order, each at its own time', async () => {
  const clock = new FakeClock(0);
  const woke: Array<[string, number]> = [];
  void clock.sleep(300).then(() => woke.push(['late', clock.now()]));
  void clock.sleep(100).then(() => woke.push(['early', clock.now()]));
  await clock.advance(200);
  expect(woke).toEqual([['early', 100]]);
  await clock.advance(200);
  expect(woke).toEqual([
    ['early', 100],
    ['late', 300],
  ]);
  expect(clock.now()).toBe(400);
  expect(clock.pending).toBe(0);
});

it('an abort rejects the sleep as cancelled and removes it', async () => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const sleeping = clock.sleep(1000, controller.signal);
  expect(clock.pending).toBe(1);
  controller.abort();
  await expect(sleeping).rejects.toSatisfy((e) => e instanceof SubconsciousError && e.code === 'cancelled');
  expect(clock.pending).toBe(0);
});

it('a woken sleep leaves no listener on a long-lived signal', async () => {
  const clock = new FakeClock(0);
  const signal = new AbortController().signal;
  for (let i = 0; i < 20; i++) {
    const sleeping = clock.sleep(10, signal);
    await clock.advance(10);
    await sleeping;
  }
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
});

it('step moves time and wakes the sleepers due, earliest first, leaving their continuations to run after it', async () => {
  const clock = new FakeClock(0);
  const woke: Array<[string, number]> = [];
  const sleeps = [
    clock.sleep(300).then(() => woke.push(['late', clock.now()])),
    clock.sleep(100).then(() => woke.push(['early', clock.now()])),
    clock.sleep(900).then(() => woke.push(['later still', clock.now()])),
  ];
  clock.step(500);
  expect(woke).toEqual([]); // nothing ran yet: the caller awaits what it measures
  expect([clock.now(), clock.pending]).toEqual([500, 1]);
  await Promise.all(sleeps.slice(0, 2));
  expect(woke).toEqual([
    ['early', 500],
    ['late', 500],
  ]);
  clock.step(400);
  await sleeps[2];
  expect(woke.at(-1)).toEqual(['later still', 900]);
});
