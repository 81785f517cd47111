/**
 * Where focus goes in the Memory screen's list (`[data-memory-list]`, one `[data-memory-id]`
 * row each, see ./MemoryRow.svelte) after a change: back to a row, or to what now sits where
 * a row was. The list (and the fallback) are read once the DOM is updated, hence getters.
 */
import { tick } from 'svelte';

/** Once the DOM is updated, focus a row's open button (or its Pin button). */
export async function focusRow(
  listRoot: () => HTMLElement | undefined,
  id: string,
  part: 'open' | 'pin' = 'open',
): Promise<void> {
  await tick();
  const row = listRoot()?.querySelector(`[data-memory-id="${CSS.escape(id)}"]`);
  const target =
    part === 'pin'
      ? row?.querySelector<HTMLButtonElement>('.actions button[data-action="pin"]')
      : row?.querySelector<HTMLButtonElement>('button.open');
  target?.focus();
}

/** Where the row is among those listed (-1: not listed). */
export function rowIndex(listRoot: HTMLElement | undefined, id: string): number {
  const all = [...(listRoot?.querySelectorAll<HTMLElement>('[data-memory-id]') ?? [])];
  return all.findIndex((el) => el.dataset.memoryId === id);
}

/** Once the DOM is updated, focus what now sits where `index` was (or the last memory, or `fallback`). */
export async function focusNear(
  listRoot: () => HTMLElement | undefined,
  index: number,
  fallback: () => HTMLElement | undefined,
): Promise<void> {
  await tick();
  const all = [...(listRoot()?.querySelectorAll<HTMLButtonElement>('button.open') ?? [])];
  const target = all[Math.min(Math.max(index, 0), all.length - 1)];
  if (target) target.focus();
  else fallback()?.focus();
}
