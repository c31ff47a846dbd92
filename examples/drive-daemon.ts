/**
 * Example (b): drive a running daemon from another process with the typed client.
 *
 *   subconscious start                                   (prints http://127.0.0.1:7777/?token=…)
 *   SUBCONSCIOUS_URL=http://127.0.0.1:7777 SUBCONSCIOUS_TOKEN=… node drive-daemon.js
 *
 * Adds a task, waits for the daemon's `tasks.changed` event about it, lists the tasks, and shows
 * a typed error. Methods, params, results and events are typed from the protocol's contracts.
 */
import { createClient, SubconsciousClientError } from 'subconscious-engine/client';
import type { Task } from 'subconscious-engine/protocol';

const url = process.env.SUBCONSCIOUS_URL ?? 'http://127.0.0.1:7777';
const token = process.env.SUBCONSCIOUS_TOKEN;
if (!token) throw new Error('Set SUBCONSCIOUS_TOKEN (the file <workspace>/.subconscious/token).');

const client = createClient({ url, token });
const health = await client.health();
console.log(`daemon up: ${health.ok === true}`);

// Subscribe first, then act: the event about our task cannot slip by.
const changed = client.next('tasks.changed', (data) => data.action === 'added');
const task: Task = await client.call('subconscious.tasks_add', { title: 'Check urgent emails', recurrence: 'pending' });
console.log(`added task ${task.id}: ${task.title}`);
const event = await changed;
console.log(`event ${event.type}: ${event.data.action} ${event.data.id === task.id ? 'our task' : event.data.id}`);

const tasks = await client.call('subconscious.tasks_list');
console.log(`tasks: ${tasks.length}`);

try {
  await client.call('subconscious.tasks_update', { task_id: 'no-such-task', enabled: false });
} catch (err) {
  if (!(err instanceof SubconsciousClientError)) throw err;
  console.log(`typed error: ${err.code}`);
}
