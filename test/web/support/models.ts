/**
 * What the scripted model server answers for the page tests. It recognises each call of the
 * tasks world by its system prompt (imported from the world, so the two cannot drift) and
 * answers per task title; evaluations can be held open so a test sees rows `in_progress`.
 */
import { AGENT_ANALYSIS_SYSTEM, AGENT_APPROVED_SYSTEM, AGENT_FULL_SYSTEM, EVALUATION_SYSTEM, EXECUTION_SYSTEM } from '../../../src/worlds/tasks/prompts.js';
import type { ChatMessage, ModelServer, RecordedRequest, ScriptedReply } from '../../support/model-server.js';

type Decision = 'noop' | 'act' | 'escalate';

export interface PageModels {
  /** Tasks whose title contains `titlePart` get `decision` (others: noop). */
  decide(titlePart: string, decision: Decision): void;
  /** What the agent's analysis says for a task (end it with a RECOMMENDED ACTION line to escalate). */
  analyse(titlePart: string, text: string): void;
  /** What the local model answers when a task acts. */
  act(titlePart: string, text: string): void;
  /** Hold the next evaluations until `release()`; `reached` resolves when one is waiting. */
  holdEvaluations(): { reached: Promise<void>; release(): void };
  /** The kinds of call seen so far, in order. */
  readonly seen: string[];
}

const first = (s: string) => s.split('\n')[0]!;

function contentText(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => (typeof p === 'object' && p && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return '';
}

export function scriptPageModels(server: ModelServer): PageModels {
  const decisions: Array<[string, Decision]> = [];
  const analyses: Array<[string, string]> = [];
  const acts: Array<[string, string]> = [];
  const seen: string[] = [];
  let hold: { reached: () => void; gate: Promise<void> } | null = null;

  const pick = <T>(rules: Array<[string, T]>, text: string): T | undefined => rules.find(([part]) => text.includes(part))?.[1];

  server.handle(async (req: RecordedRequest): Promise<ScriptedReply> => {
    const messages = req.body?.messages ?? [];
    const system = messages
      .filter((m) => m.role === 'system')
      .map(contentText)
      .join('\n');
    const user = messages
      .filter((m) => m.role === 'user')
      .map(contentText)
      .join('\n');
    // Execution prompts end with `# Task` and the fenced title; the report before it may name other tasks.
    const taskPart = user.includes('# Task\n') ? user.slice(user.lastIndexOf('# Task\n')) : user;
    const usage = { prompt_tokens: Math.ceil((system.length + user.length) / 4), completion_tokens: 0 };
    const reply = (text: string): ScriptedReply => ({ text, usage: { ...usage, completion_tokens: Math.ceil(text.length / 4) } });

    if (system.includes(first(EVALUATION_SYSTEM))) {
      seen.push('evaluate');
      if (hold) {
        const h = hold;
        h.reached();
        await h.gate;
      }
      const out = user
        .split('- task_id: ')
        .slice(1)
        .map((chunk) => {
          const id = chunk.split('\n')[0]!.trim();
          const decision = pick(decisions, chunk) ?? 'noop';
          return { task_id: id, decision, reason: decision === 'noop' ? 'Nothing changed since the last check.' : `Scripted ${decision} for the page test.` };
        });
      return { json: { decisions: out }, usage: { ...usage, completion_tokens: 12 * out.length } };
    }
    if (system.includes(first(EXECUTION_SYSTEM))) {
      seen.push('execute');
      return reply(pick(acts, taskPart) ?? 'Checked: nothing needs attention.');
    }
    if (system.includes(first(AGENT_ANALYSIS_SYSTEM))) {
      seen.push('analysis');
      return reply(pick(analyses, taskPart) ?? 'Read everything; no action is needed.');
    }
    if (system.includes(first(AGENT_APPROVED_SYSTEM))) {
      seen.push('approved');
      return reply('Done: carried out the approved action.');
    }
    if (system.includes(first(AGENT_FULL_SYSTEM))) {
      seen.push('full');
      return reply('Done: carried out the task.');
    }
    seen.push('unknown');
    return { status: 400, message: `page test: unscripted request (system prompt: ${first(system).slice(0, 80)})` };
  });

  return {
    decide: (part, d) => void decisions.unshift([part, d]),
    analyse: (part, text) => void analyses.unshift([part, text]),
    act: (part, text) => void acts.unshift([part, text]),
    holdEvaluations() {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((r) => (reached = r));
      const gate = new Promise<void>((r) => (release = r));
      hold = { reached, gate };
      return {
        reached: reachedP,
        release: () => {
          hold = null;
          release();
        },
      };
    },
    get seen() {
      return seen;
    },
  };
}
