/**
 * A Settings section another screen asked to show (e.g. Chat's "Set up a provider…" →
 * Providers). The Settings screen scrolls to it and focuses its heading once mounted.
 */
export type SettingsSection = 'providers' | 'models' | 'spending';

const pending = $state<{ id: SettingsSection | null }>({ id: null });

export function requestSection(id: SettingsSection): void {
  pending.id = id;
}

/** The requested section, if any (reactive). */
export function pendingSection(): SettingsSection | null {
  return pending.id;
}

export function clearPendingSection(): void {
  pending.id = null;
}
