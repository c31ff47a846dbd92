/**
 * What a model call was for, in words a person reads (issue 23: no `execute_analysis` on the
 * page). The ledger keeps its purpose codes; the page shows these, and the code stays in a
 * tooltip for whoever greps the logs. A repair retry reads as its call plus "(repair retry)".
 */
export const PURPOSE_WORDS: Record<string, string> = {
  evaluate: 'deciding what each task needs',
  execute: 'text answer (local model)',
  execute_analysis: 'read-only look (agent)',
  execute_write: 'carrying out a task (agent)',
  execute_full: 'carrying out a task (agent)',
  approved_action: 'the action you approved (agent)',
  task_execute: 'carrying out a task (agent)',
  bot_turn: 'a bot’s reply',
  bot_routine: 'a bot’s routine',
  bot_handoff: 'a bot’s hand-off',
  bot_external: 'a bot’s outside request',
  heartbeat_pulse: 'heartbeat check',
  heartbeat_resume: 'heartbeat resume',
  memory_reflect: 'reading memory changes',
  conscious_extract: 'finding actionables',
  reasoning: 'steering review',
  quick_instruct: 'steering: a quick instruction',
  quick_respond: 'steering: a quick answer',
  compress: 'steering: shortening the history',
};

export function purposeWords(purpose: string): string {
  const repair = purpose.endsWith('_repair');
  const base = repair ? purpose.slice(0, -'_repair'.length) : purpose;
  const words = PURPOSE_WORDS[base] ?? base.replace(/_/g, ' ');
  return repair ? `${words} (repair retry)` : words;
}
