/**
 * The page's theme: follow the system (the default), or light, or dark — the person's choice,
 * remembered in this browser (localStorage) and applied before the first paint of each visit.
 */
export type ThemeChoice = 'system' | 'light' | 'dark';

export const THEME_KEY = 'subconscious.theme';

export function readTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system'; // storage refused (a locked-down profile): the system's scheme
  }
}

/** `data-theme` on <html> overrides the system's scheme (theme.css); without it the page follows the system. */
export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === 'system') {
    delete root.dataset.theme;
    root.style.removeProperty('color-scheme');
  } else {
    root.dataset.theme = choice;
    root.style.colorScheme = choice;
  }
}

export function saveTheme(choice: ThemeChoice): void {
  try {
    if (choice === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, choice);
  } catch {
    // Not remembered, still applied.
  }
  applyTheme(choice);
}
