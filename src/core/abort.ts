/**
 * Stop waiting for work that may not listen to its signal: the returned promise settles with
 * the work, or rejects as soon as `signal` aborts (with `onAbort()`, else the signal's reason).
 * The work itself goes on; callers use this only where its late result is safely ignored.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort?: () => unknown): Promise<T> {
  if (!signal) return work;
  const reason = () => (onAbort ? onAbort() : signal.reason);
  if (signal.aborted) {
    work.catch(() => undefined); // nobody waits for it any more
    return Promise.reject(reason());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(reason());
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err);
      },
    );
  });
}
