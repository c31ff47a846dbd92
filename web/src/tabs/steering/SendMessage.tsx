/**
 * A channel message into the harness (`orchestration.send`): it answers at once with the queued
 * cycle, which then shows up in "Recent cycles" and runs there live. A refused field (the
 * daemon's `details.field`) is marked on its input.
 */
import { useId, useState, type FormEvent } from 'react';
import { RpcError, call, explain } from '../../api/rpc.js';
import { useShell } from '../../shell/context.js';
import { MessageText } from '../../ui/MessageText.js';
import { Section } from '../../ui/Section.js';

type Field = 'channel' | 'text';

export function SendMessage(props: { onSent(): void }) {
  const { notify } = useShell();
  const ids = useId();
  const [channel, setChannel] = useState('web');
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<{ field: Field | null; text: string } | null>(null);
  const errorId = `${ids}-error`;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!channel.trim()) return setError({ field: 'channel', text: 'Name the channel the message comes from, e.g. web or slack.' });
    if (!text.trim()) return setError({ field: 'text', text: 'Write the message first.' });
    setSending(true);
    setError(null);
    try {
      const sent = await call('orchestration.send', { channel: channel.trim(), text: text.trim() });
      setText('');
      notify(`Cycle ${sent.seq} is queued: it appears under Recent cycles.`, 'info');
      props.onSent();
    } catch (err) {
      const field = refusedField(err);
      setError({ field, text: `The message was not sent: ${explain(err)}` });
    } finally {
      setSending(false);
    }
  };

  const describedBy = (field: Field) => (error?.field === field ? errorId : undefined);

  return (
    <Section id="steering-send" title="Send a channel message">
      <form className="card send-message" onSubmit={submit} noValidate>
        <p className="small muted">Each message runs one cycle through the harness, as a message from that channel would.</p>
        <div className="send-channel">
          <label htmlFor={`${ids}-channel`}>Channel</label>
          <input
            id={`${ids}-channel`}
            type="text"
            value={channel}
            maxLength={64}
            spellCheck={false}
            onChange={(e) => setChannel(e.target.value)}
            aria-invalid={error?.field === 'channel'}
            aria-describedby={describedBy('channel')}
          />
        </div>
        <label htmlFor={`${ids}-text`}>Message</label>
        <textarea
          id={`${ids}-text`}
          rows={3}
          value={text}
          maxLength={8000}
          placeholder="e.g. Acme says invoice 1042 was charged twice."
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            // Ctrl/⌘+Enter sends, as chat boxes do; Enter alone makes a new line.
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void submit(e);
          }}
          aria-invalid={error?.field === 'text'}
          aria-describedby={describedBy('text')}
        />
        <div className="send-actions">
          <button type="submit" className="primary" disabled={sending}>
            {sending ? 'Sending…' : 'Send'}
          </button>
        </div>
        {error && (
          <p id={errorId} className="coral small" role="alert" data-testid="send-error">
            <MessageText text={error.text} />
          </p>
        )}
      </form>
    </Section>
  );
}

/** The field the daemon refused: its `details.field`, or the one its params check names ("Invalid params for …: channel: …"). */
function refusedField(err: unknown): Field | null {
  if (!(err instanceof RpcError)) return null;
  const named = err.field ?? /^Invalid params for [\w.]+: (\w+):/.exec(err.message)?.[1];
  return named === 'channel' || named === 'text' ? named : null;
}
