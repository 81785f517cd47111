/**
 * One short, polite message at a time ("Copied", "Link copied …"), shown at the bottom of the
 * window by <Toast /> and read by screen readers (role="status").
 */
const state = $state<{ text: string; id: number; kind: 'info' | 'error' }>({ text: '', id: 0, kind: 'info' });
let timer: ReturnType<typeof setTimeout> | undefined;

export function notify(text: string, kind: 'info' | 'error' = 'info', ms = 3500): void {
  clearTimeout(timer);
  state.text = text;
  state.kind = kind;
  state.id += 1;
  timer = setTimeout(() => {
    state.text = '';
  }, ms);
}

export function toast(): { text: string; id: number; kind: 'info' | 'error' } {
  return state;
}
