/** Short-lived messages (a rolled-back action, a started run), announced to screen readers. */
import { MessageText } from '../ui/MessageText.js';
import type { NoticeAction, NoticeTone } from './context.js';

export interface Notice {
  id: number;
  text: string;
  tone: NoticeTone;
  action?: NoticeAction | undefined;
}

/** Focus a button as it mounts (once: a re-render does not pull the keyboard back). */
function focusOnce(el: HTMLButtonElement | null): void {
  if (el && !el.dataset.focused) {
    el.dataset.focused = 'true';
    el.focus();
  }
}

export function Notices(props: { notices: Notice[]; dismiss: (id: number) => void }) {
  return (
    <div className="notices" aria-live="polite" aria-relevant="additions">
      {props.notices.map((n) => (
        <div key={n.id} className={`notice notice-${n.tone}`} role={n.tone === 'error' ? 'alert' : 'status'} data-testid="notice">
          <span>
            <MessageText text={n.text} />
          </span>
          {n.action && (
            <button
              type="button"
              className="link notice-action"
              ref={n.action.focus ? focusOnce : undefined}
              onClick={() => {
                props.dismiss(n.id);
                void n.action!.run();
              }}
            >
              {n.action.label}
            </button>
          )}
          <button type="button" className="link" aria-label="Dismiss message" onClick={() => props.dismiss(n.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
