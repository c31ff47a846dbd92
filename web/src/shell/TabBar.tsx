/**
 * The tab strip: a WAI-ARIA tablist (arrow keys move between tabs, Home/End jump). A tab shows
 * how many "Needs you" items are its world's (`counts`); on a narrow screen the tabs wrap, so
 * every one stays in view.
 */
import { useRef, type KeyboardEvent } from 'react';
import type { TabDefinition } from '../tabs/types.js';

export function TabBar(props: { tabs: readonly TabDefinition[]; active: string; onSelect: (id: string) => void; counts?: ReadonlyMap<string, number> }) {
  const refs = useRef(new Map<string, HTMLButtonElement>());
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    // Move from the tab that has focus (WAI-ARIA tabs pattern), falling back to the selected one.
    const focused = props.tabs.findIndex((t) => refs.current.get(t.id) === document.activeElement);
    const i = focused >= 0 ? focused : props.tabs.findIndex((t) => t.id === props.active);
    const n = props.tabs.length;
    const target = e.key === 'ArrowRight' ? (i + 1) % n : e.key === 'ArrowLeft' ? (i - 1 + n) % n : e.key === 'Home' ? 0 : e.key === 'End' ? n - 1 : -1;
    const tab = props.tabs[target];
    if (!tab) return;
    e.preventDefault();
    props.onSelect(tab.id);
    refs.current.get(tab.id)?.focus();
  };
  return (
    <div role="tablist" aria-label="Views" className="tabbar" onKeyDown={onKey}>
      {props.tabs.map((t) => (
        <button
          key={t.id}
          ref={(el) => {
            if (el) refs.current.set(t.id, el);
            else refs.current.delete(t.id);
          }}
          type="button"
          role="tab"
          id={`tab-${t.id}`}
          aria-selected={t.id === props.active}
          aria-controls={`panel-${t.id}`}
          tabIndex={t.id === props.active ? 0 : -1}
          className="tab"
          onClick={() => props.onSelect(t.id)}
          aria-label={badge(props.counts, t.id) ? `${t.label}, ${badge(props.counts, t.id)} waiting for you` : undefined}
        >
          {t.label}
          {badge(props.counts, t.id) > 0 && (
            <span className="tab-badge" data-testid="tab-badge" data-tab={t.id} aria-hidden="true">
              {badge(props.counts, t.id)}
            </span>
          )}
        </button>
      ))}
    </div>
  );
}

function badge(counts: ReadonlyMap<string, number> | undefined, id: string): number {
  return counts?.get(id) ?? 0;
}
