/**
 * "Needs you" as data (issue 23): what counts as waiting for the person in each world, the
 * order (most urgent first, then oldest), and the tab badges adding up to exactly the list; what
 * a person answered lately and how (issue 18 §5).
 */
import { describe, expect, it } from 'vitest';
import type { Actionable, AnswerVia, Approval, Checkin, Escalation, InstanceStatus, Task } from '../../src/protocol/index.js';
import { answeredHow, answeredWords, collectAnswered } from '../../web/src/shell/inbox/answered.js';
import { collectInbox, countByTab, tabOfWorld, titleWith } from '../../web/src/shell/inbox/items.js';

const esc = (id: string, priority: Escalation['priority'], status: Escalation['status'] = 'pending', at = 1): Escalation =>
  ({ id, task_id: 't', log_id: `l-${id}`, title: id, description: 'd', analysis: null, priority, status, created_at: at }) as Escalation;
const apr = (id: string, world: string, state: Approval['state'] = 'pending'): Approval =>
  ({ id, world, state, created_at: 5, tool: 'write_file', server: 'fs' }) as Approval;
const chk = (id: string, state: Checkin['state'] = 'pending'): Checkin =>
  ({ id, bot_id: 'b1', thread_id: 'th', state, created_at: 3, question: 'q' }) as Checkin;
const task = (id: string, write_choice: Task['write_choice']): Task => ({ id, title: id, write_choice, updated_at: 2 }) as Task;
const act = (id: string, requires_confirmation: boolean, state: Actionable['state'] = 'new'): Actionable =>
  ({ id, title: id, requires_confirmation, state, priority: 'important', updated_at: 4 }) as Actionable;
const inst = (world: string, failures: number, halted = false, enabled = true): InstanceStatus =>
  ({ world, tab: null, enabled, halted, consecutive_failures: failures, last_tick_at: 9 }) as InstanceStatus;

describe('Needs you: what waits, in what order, and the badges', () => {
  const items = collectInbox({
    escalations: [esc('a', 'normal', 'pending', 2), esc('b', 'critical'), esc('done', 'critical', 'approved')],
    approvals: [apr('p1', 'bots'), apr('p2', 'tasks', 'approved')],
    checkins: [chk('c1'), chk('c2', 'answered')],
    botNames: new Map([['b1', 'Scout']]),
    tasks: [task('w1', 'heartbeat_md'), task('w2', 'person'), task('w3', 'older_version')],
    actionables: [act('x1', true), act('x2', false), act('x3', true, 'done')],
    instances: [inst('steering', 2), inst('memory', 0), inst('conscious', 3, false, false)],
  });

  it('takes only what is pending and needs the person', () => {
    expect(items.map((i) => i.key).sort()).toEqual(['act:x1', 'apr:p1', 'chk:c1', 'esc:a', 'esc:b', 'fail:steering', 'wr:w1', 'wr:w3'].sort());
  });

  it('orders by priority, then oldest first', () => {
    expect(items.slice(0, 2).map((i) => i.priority)).toEqual(['critical', 'critical']);
    const normal = items.filter((i) => i.priority === 'normal').map((i) => i.at);
    expect(normal).toEqual([...normal].sort((a, b) => a - b));
  });

  it('the badges on the tabs add up to exactly the list, and the title says the same number', () => {
    const counts = countByTab(items);
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(items.length);
    expect(counts.get('subconscious')).toBe(4); // two cards and two write rights
    expect(counts.get('bots')).toBe(2); // the bot's approval and the check-in
    expect(titleWith(items.length)).toBe(`(${items.length}) subconscious`);
    expect(titleWith(0)).toBe('subconscious');
  });

  it('maps worlds to their tabs, preferring what status says', () => {
    expect(tabOfWorld('tasks')).toBe('subconscious');
    expect(tabOfWorld('heartbeat')).toBe('bots');
    expect(tabOfWorld('steering', [{ ...inst('steering', 0), tab: 'steer' }])).toBe('steer');
  });
});

describe('Answered lately: a person’s answers, newest first, each with how it was given', () => {
  const answer = (via: AnswerVia, by: string, kind: 'accept' | 'ignore' = 'ignore') => ({ kind, arguments: null, text: null, by, via });
  const done = (id: string, at: number, a: ReturnType<typeof answer> | null, status: Escalation['status'] = 'dismissed'): Escalation =>
    ({ ...esc(id, 'normal', status), resolved_at: at, answer: a }) as Escalation;
  const resolved = (id: string, state: Checkin['state'], at: number, via: AnswerVia | null, by: string | null): Checkin =>
    ({ ...chk(id, state), resolved_at: at, answered_via: via, answered_by: by }) as Checkin;
  const list = collectAnswered({
    escalations: [
      esc('waiting', 'normal'),
      done('page', 5, answer('page', 'you')),
      done('mcp', 7, answer('mcp', 'Claude Desktop', 'accept'), 'approved'),
      done('itself', 8, null, 'resolved'),
      done('skipped', 9, answer('subconscious', 'subconscious')),
    ],
    checkins: [
      chk('open'),
      resolved('thread', 'answered', 6, null, null),
      resolved('rpc', 'dismissed', 4, 'rpc', 'ops-script'),
      resolved('retry', 'superseded', 3, 'cli', 'you'),
      resolved('heartbeat', 'superseded', 10, null, null),
    ],
    botNames: new Map([['b1', 'Scout']]),
  });

  it('takes only what a person answered, newest first', () => {
    expect(list.map((a) => a.key)).toEqual(['esc:mcp', 'chk:thread', 'esc:page', 'chk:rpc', 'chk:retry']);
    expect(list.find((a) => a.kind === 'checkin')!.bot).toBe('Scout');
  });

  it('says how each was answered', () => {
    expect(list.map(answeredWords)).toEqual([
      'Approved over MCP by Claude Desktop',
      'Answered in the thread',
      'Dismissed on the page',
      'Dismissed over RPC by ops-script',
      'Retried from the CLI',
    ]);
    expect(answeredHow('mcp', null)).toBe('over MCP by an MCP client');
    expect(answeredHow('rpc', 'you')).toBe('over RPC');
  });
});
