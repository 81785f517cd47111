/**
 * Arrow-key navigation in a list of focusable items (the conversation list, memory rows):
 * ArrowUp/ArrowDown move one item, Home/End to the ends. Focuses the target and returns
 * true when the key was one of those; other keys are left alone.
 */
export function moveFocusInList(event: KeyboardEvent, items: HTMLElement[], current: HTMLElement): boolean {
  const index = items.indexOf(current);
  let next: number | null = null;
  switch (event.key) {
    case 'ArrowDown':
      next = Math.min(index + 1, items.length - 1);
      break;
    case 'ArrowUp':
      next = Math.max(index - 1, 0);
      break;
    case 'Home':
      next = 0;
      break;
    case 'End':
      next = items.length - 1;
      break;
  }
  if (next === null) return false;
  event.preventDefault();
  items[next]?.focus();
  return true;
}
