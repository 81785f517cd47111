import type { IconName } from '../lib/components/Icon.svelte';

export const ROUTE_IDS = ['chat', 'memory', 'folders', 'tools', 'activity', 'usage', 'settings'] as const;
export type RouteId = (typeof ROUTE_IDS)[number];

export type Route = { id: RouteId; label: string; icon: IconName };

/** The sidebar entries, in order; Ctrl/⌘ + 1…7 follow this order. */
export const ROUTES: readonly Route[] = [
  { id: 'chat', label: 'Chat', icon: 'chat' },
  { id: 'memory', label: 'Memory', icon: 'memory' },
  { id: 'folders', label: 'Folders', icon: 'folders' },
  { id: 'tools', label: 'Tools', icon: 'tools' },
  { id: 'activity', label: 'Activity', icon: 'activity' },
  { id: 'usage', label: 'Usage', icon: 'usage' },
  { id: 'settings', label: 'Settings', icon: 'settings' },
];

export const DEFAULT_ROUTE: RouteId = 'chat';

export function hrefFor(id: RouteId): string {
  return `#/${id}`;
}

/** `#/memory` → `memory`; anything else → null. */
export function parseHash(hash: string): RouteId | null {
  const match = /^#\/([a-z]+)\/?$/.exec(hash);
  const id = match?.[1];
  return id !== undefined && (ROUTE_IDS as readonly string[]).includes(id) ? (id as RouteId) : null;
}
