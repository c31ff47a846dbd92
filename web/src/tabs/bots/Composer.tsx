/**
 * Writing to a thread. Enter sends, Shift+Enter starts a new line. In a group, typing `@`
 * offers the members (↑/↓ to choose, Enter or Tab to complete, Esc to close) and the hint says
 * who can be mentioned; a message that mentions nobody is refused with the reason under it.
 */
import { useId, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import type { BotWithStatus, ThreadSummary } from '../../../../src/protocol/bots.js';
import { call } from '../../api/rpc.js';
import { MessageText } from '../../ui/MessageText.js';
import { fieldError } from './errors.js';
import { completeMention, mentionAt, mentioned } from './mentions.js';

const MAX_CHARS = 100_000;

export function Composer(props: { thread: ThreadSummary; members: BotWithStatus[] }) {
  const { thread, members } = props;
  const ids = useId();
  const group = thread.kind === 'group';
  const [text, setText] = useState('');
  const [caret, setCaret] = useState(0);
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [active, setActive] = useState(0);
  const [dismissedAt, setDismissedAt] = useState<number | null>(null);
  const input = useRef<HTMLTextAreaElement>(null);

  const at = group ? mentionAt(text, caret) : null;
  const options = useMemo(() => (at ? members.filter((m) => m.name.startsWith(at.query) || m.label.toLowerCase().startsWith(at.query)) : []), [at, members]);
  const open = at !== null && options.length > 0 && dismissedAt !== at.start;
  const listId = `${ids}-mentions`;
  const errorId = `${ids}-error`;
  const hintId = `${ids}-hint`;
  const named = group ? mentioned(text).filter((n) => members.some((m) => m.name === n)) : [];

  const accept = (name: string) => {
    const next = completeMention(text, caret, name);
    setText(next.text);
    setCaret(next.caret);
    setActive(0);
    requestAnimationFrame(() => {
      input.current?.focus();
      input.current?.setSelectionRange(next.caret, next.caret);
    });
  };

  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    const body = text.trim();
    if (!body || sending) {
      if (!body) setError('Write a message first.');
      return;
    }
    // Mentions of no one at all are refused here; an unknown @name is left for the daemon to name.
    if (group && mentioned(body).length === 0) {
      setError(`Mention who should answer: ${members.map((m) => `@${m.name}`).join(', ')}.`);
      return;
    }
    setSending(true);
    setError(null);
    try {
      await call('bots.send_message', { thread_id: thread.id, text: body });
      setText('');
      setCaret(0);
    } catch (err) {
      const f = fieldError(err);
      setError(f.text);
    } finally {
      setSending(false);
      input.current?.focus();
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (open) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = options.length;
        setActive((i) => (e.key === 'ArrowDown' ? (i + 1) % n : (i - 1 + n) % n));
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        accept(options[Math.min(active, options.length - 1)]!.name);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        setDismissedAt(at.start);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      void send();
    }
  };

  const placeholder = group ? `Message the group — @${members[0]?.name ?? 'name'} says who answers` : `Message @${members[0]?.name ?? 'the bot'}`;
  const describedBy = [hintId, error ? errorId : undefined].filter(Boolean).join(' ');

  return (
    <form
      className="composer"
      onSubmit={(e) => void send(e)}
      aria-label={group ? `Write to ${thread.name}` : `Write to @${members[0]?.name ?? 'the bot'}`}
      noValidate
    >
      <div className="composer-box">
        <label htmlFor={`${ids}-text`} className="visually-hidden">
          Message
        </label>
        <textarea
          id={`${ids}-text`}
          ref={input}
          rows={2}
          value={text}
          maxLength={MAX_CHARS}
          placeholder={placeholder}
          onChange={(e) => {
            setText(e.target.value);
            setCaret(e.target.selectionStart);
            setActive(0);
            if (error) setError(null);
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart)}
          onKeyDown={onKeyDown}
          aria-invalid={error !== null}
          aria-describedby={describedBy}
          data-testid="composer-input"
          {...(group
            ? {
                role: 'combobox',
                'aria-autocomplete': 'list' as const,
                'aria-expanded': open,
                'aria-controls': listId,
                ...(open ? { 'aria-activedescendant': `${listId}-${Math.min(active, options.length - 1)}` } : {}),
              }
            : {})}
        />
        <button type="submit" className="primary" disabled={sending}>
          {sending ? 'Sending…' : 'Send'}
        </button>
      </div>
      {group && (
        <ul id={listId} role="listbox" className="mentions" aria-label="Mention a bot" hidden={!open} data-testid="mention-options">
          {open &&
            options.map((m, i) => (
              <li
                key={m.id}
                id={`${listId}-${i}`}
                role="option"
                aria-selected={i === Math.min(active, options.length - 1)}
                className="mention-option"
                onMouseDown={(e) => {
                  e.preventDefault(); // keep the focus in the message
                  accept(m.name);
                }}
              >
                <strong>@{m.name}</strong> <span className="muted">{m.label}</span>
              </li>
            ))}
        </ul>
      )}
      <p id={hintId} className="muted small composer-hint">
        {group ? (
          named.length > 0 ? (
            <>Goes to {named.map((n) => `@${n}`).join(', ')}. Enter sends, Shift+Enter for a new line.</>
          ) : (
            <>
              Type <code>@</code> to mention who should answer: {members.map((m) => `@${m.name}`).join(', ')}.
            </>
          )
        ) : (
          'Enter sends, Shift+Enter for a new line.'
        )}
      </p>
      {error && (
        <p id={errorId} className="coral small" role="alert" data-testid="composer-error">
          <MessageText text={error} />
        </p>
      )}
    </form>
  );
}
