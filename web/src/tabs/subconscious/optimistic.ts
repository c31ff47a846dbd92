/**
 * Apply a change on screen at once, then make the call; if the call fails, put the old data
 * back and say why (`notify` also gets the error, for a form that shows it by its field).
 * Either way, reload so the screen ends on the daemon's truth.
 */
import { explain } from '../../api/rpc.js';
import type { Resource } from '../../shell/resource.js';

export async function optimistic<T>(
  res: Resource<T>,
  apply: (data: T) => T,
  call: () => Promise<unknown>,
  failure: string,
  notify: (text: string, tone: 'info' | 'error', err?: unknown) => void,
): Promise<boolean> {
  const before = res.data;
  if (before !== undefined) res.mutate(() => apply(before));
  try {
    await call();
    return true;
  } catch (err) {
    res.mutate(() => before);
    notify(`${failure}: ${explain(err)}`, 'error', err);
    return false;
  } finally {
    void res.reload();
  }
}
