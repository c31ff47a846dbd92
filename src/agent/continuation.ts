/**
 * The host's note to a run that continues one its worker's death cut off (issue 17): what the
 * cut-off run had recorded — its tool steps, and the text it had written — fenced as data (it is
 * the model's and the tools' output, never instructions), and not to redo it: an effect the cut-off
 * run had (a tool call that returned) must not happen twice.
 */
import { fence } from '../llm/index.js';
import { formatSteps, type RecordedStep } from './checkpoint.js';

export function continuationNote(o: {
  /** The first line: what was cut off and that this run continues it. */
  intro: string;
  /** The steps the cut-off run (and the runs before it) took. */
  steps: readonly RecordedStep[];
  /** The text it had written, if any, with the label its fence carries. */
  partial?: { label: string; text: string } | undefined;
  /** The last line: what to finish. */
  finish: string;
}): string {
  const lines = [o.intro];
  if (o.steps.length > 0)
    lines.push(
      'Tool steps already taken (do not repeat them; their effects happened):',
      fence(formatSteps(o.steps), { label: 'checkpoint steps', maxChars: 3000 }),
    );
  const partial = o.partial?.text.trim() ?? '';
  if (partial) lines.push('What you had written when it stopped:', fence(partial, { label: o.partial!.label, maxChars: 1500, keep: 'tail' }));
  lines.push(o.finish);
  return lines.join('\n');
}
