/**
 * The first screen in plain words (issue 10): what this page does, what the person decides, and
 * the few words that must stay (tick, world, nothing new, approval) explained where they appear.
 * On a first run (no task of the person's own, nothing in the log yet) it says where to start.
 */
import type { Task } from '../../api/types.js';

export function Intro(props: { tasks: Task[] | undefined; intervalMinutes: number | undefined; firstRun: boolean }) {
  const every = props.intervalMinutes ? `${props.intervalMinutes} minutes` : 'few minutes';
  return (
    <section className="intro card" aria-labelledby="intro-heading" data-testid="intro" data-first-run={props.firstRun}>
      <h2 id="intro-heading">{props.firstRun ? 'Welcome: no tasks of your own yet' : 'What happens here'}</h2>
      <p>
        Every {every}, subconscious looks at your <strong>standing tasks</strong> — things to keep an eye on, like “Check urgent emails” — against what changed
        in your workspace. For each one a small local model decides: <em>nothing new</em>, <em>a short answer</em>, or <em>hand it to the agent</em>, which can
        use tools. A task whose inputs did not change is not asked about again, so a quiet day costs nothing.
      </p>
      <p>
        Nothing is sent or changed unless you said so: a task only reads, unless you allow it to act. When the agent wants to do something you did not ask for,
        it asks first under <strong>Needs you</strong> at the top of the page.
      </p>
      {props.firstRun && (
        <p data-testid="first-run-hint">
          <strong>Start here:</strong> add a task below, for example “Summarize new files in the notes folder” or “Check that the build is green”. The three
          tasks marked <em>default</em> come with subconscious; you can switch them off. Lines in <code>HEARTBEAT.md</code> in your workspace become tasks too
          (mark one <code>- [write] …</code> and confirm it here to let it act without asking).
        </p>
      )}
      <details className="glossary" data-testid="glossary">
        <summary>What do the words on this page mean?</summary>
        <dl>
          <div>
            <dt>Tick</dt>
            <dd>One round of checking, every {every}. “Run now” starts one at once.</dd>
          </div>
          <div>
            <dt>World</dt>
            <dd>One of subconscious’s background loops. “Tasks” is the one on this page.</dd>
          </div>
          <div>
            <dt>Nothing new</dt>
            <dd>The model looked and found nothing to do; the log says why.</dd>
          </div>
          <div>
            <dt>Unchanged</dt>
            <dd>Nothing the task is judged on changed since it was last found “nothing new”, so it is not asked about again (no cost) until something does.</dd>
          </div>
          <div>
            <dt>Approval</dt>
            <dd>
              Something the agent would do that you did not ask for. It waits under Needs you for your answer: Accept (or “Go ahead”), Edit, Respond or Ignore.
            </dd>
          </div>
          <div>
            <dt>Writes</dt>
            <dd>Whether a task may send or change things by itself. Off unless you turn it on.</dd>
          </div>
        </dl>
      </details>
    </section>
  );
}
