/**
 * Apply a change on screen at once, then make the call; if the call fails, put the old data
 * back and say why — as a passing notice, or through `refused` for a form that shows the refusal
 * by its field. Either way, reload so the screen ends on the daemon's truth.
 */
import { explain } from '../../api/rpc.js';
import type { Resource } from '../../shell/resource.js';

export type Notify = (text: string, tone: 'info' | 'error') => void;

export async function optimistic<T>(
  res: Resource<T>,
  apply: (data: T) => T,
  call: () => Promise<unknown>,
  failure: string,
  notify: Notify,
  refused?: (text: string, err: unknown) => void,
): Promise<boolean> {
  const before = res.data;
  if (before !== undefined) res.mutate(() => apply(before));
  try {
    await call();
    return true;
  } catch (err) {
    res.mutate(() => before);
    const text = `${failure}: ${explain(err)}`;
    if (refused) refused(text, err);
    else notify(text, 'error');
    return false;
  } finally {
    void res.reload();
  }
}
