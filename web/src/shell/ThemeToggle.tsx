/** The theme switch in the top bar: system / light / dark (a radio group; arrow keys move the choice). */
import { useState, type KeyboardEvent } from 'react';
import { readTheme, saveTheme, type ThemeChoice } from './theme.js';

const CHOICES: ReadonlyArray<{ value: ThemeChoice; label: string; title: string }> = [
  { value: 'system', label: 'System', title: 'Follow this device’s light or dark setting' },
  { value: 'light', label: 'Light', title: 'Always light' },
  { value: 'dark', label: 'Dark', title: 'Always dark' },
];

export function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(() => readTheme());
  const choose = (value: ThemeChoice) => {
    setChoice(value);
    saveTheme(value);
  };
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const i = CHOICES.findIndex((c) => c.value === choice);
    const next = e.key === 'ArrowRight' || e.key === 'ArrowDown' ? i + 1 : e.key === 'ArrowLeft' || e.key === 'ArrowUp' ? i - 1 : null;
    if (next === null) return;
    e.preventDefault();
    const target = CHOICES[(next + CHOICES.length) % CHOICES.length]!;
    choose(target.value);
    (e.currentTarget.querySelector(`[data-value="${target.value}"]`) as HTMLButtonElement | null)?.focus();
  };
  return (
    <div className="theme-toggle" role="radiogroup" aria-label="Theme" data-testid="theme-toggle" onKeyDown={onKey}>
      {CHOICES.map((c) => (
        <button
          key={c.value}
          type="button"
          role="radio"
          aria-checked={choice === c.value}
          tabIndex={choice === c.value ? 0 : -1}
          data-value={c.value}
          title={c.title}
          className="theme-choice"
          onClick={() => choose(c.value)}
        >
          {c.label}
        </button>
      ))}
    </div>
  );
}
