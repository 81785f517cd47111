/**
 * Theme preference: "system" follows the OS (`prefers-color-scheme`), "light" and "dark"
 * override it. Stored in localStorage (shared by the main and quick windows) and applied
 * as `data-theme` on <html>; "system" removes the attribute.
 */

export const THEME_PREFS = ['system', 'light', 'dark'] as const;
export type ThemePref = (typeof THEME_PREFS)[number];

export const THEME_STORAGE_KEY = 'hearth.theme';

function isThemePref(value: unknown): value is ThemePref {
  return typeof value === 'string' && (THEME_PREFS as readonly string[]).includes(value);
}

function read(): ThemePref {
  try {
    const stored = localStorage.getItem(THEME_STORAGE_KEY);
    return isThemePref(stored) ? stored : 'system';
  } catch {
    return 'system';
  }
}

function apply(pref: ThemePref): void {
  const root = document.documentElement;
  if (pref === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', pref);
}

let current = $state<ThemePref>('system');

export const theme = {
  get pref(): ThemePref {
    return current;
  },
  set pref(next: ThemePref) {
    current = next;
    apply(next);
    try {
      if (next === 'system') localStorage.removeItem(THEME_STORAGE_KEY);
      else localStorage.setItem(THEME_STORAGE_KEY, next);
    } catch {
      // Storage unavailable: the choice still applies for this session.
    }
  },
};

let initialised = false;

/** Apply the stored preference now and keep in sync with changes made in the other window. */
export function initTheme(): void {
  current = read();
  apply(current);
  if (initialised) return;
  initialised = true;
  window.addEventListener('storage', (event) => {
    if (event.key !== THEME_STORAGE_KEY && event.key !== null) return;
    current = read();
    apply(current);
  });
}
