/**
 * Deleting memories with Undo. A user's delete is real in the core (`delete_memories`
 * removes the row, its search entries and its history texts), so the UI waits before asking
 * for it: the memories are hidden at once, a toast offers Undo for `undoDelay()` ms, and
 * only then is the core called. Undo just shows them again (no core call).
 *
 * One batch is pending at a time: a new delete first commits the previous batch (its toast
 * is replaced, so it could no longer be undone anyway). `flushDeletes()` commits at once;
 * the Memory screen calls it when it closes, and the window does on `pagehide` and
 * `beforeunload`.
 */
import { call, toErrorDto } from '../../lib/ipc';
import { notify } from '../../lib/toast.svelte';

export const DEFAULT_UNDO_DELAY = 10_000;

export type PendingMemory = { id: string; kind: string };

type Batch = {
  key: number;
  memories: PendingMemory[];
  timer: ReturnType<typeof setTimeout> | undefined;
};

let delay = DEFAULT_UNDO_DELAY;
let current: Batch | null = null;
let nextKey = 1;
let listening = false;

const state = $state<{
  /** Hidden until the core deleted them (or Undo brought them back). */
  hidden: PendingMemory[];
  /** The toast: which batch and what it says; null when nothing can be undone. */
  toast: { key: number; text: string } | null;
}>({ hidden: [], toast: null });

/** Called once the core answered for a batch; the memories stay hidden until they resolve. */
type SettledListener = (ids: string[], deleted: boolean) => Promise<void>;
let listeners: SettledListener[] = [];

/** How long Undo is offered (ms). The mock build lets tests shorten it. */
export function setUndoDelay(ms: number): void {
  delay = Math.max(0, ms);
}

export function undoDelay(): number {
  return delay;
}

/** Memories hidden because their delete is pending (reactive); their kinds keep the counts honest. */
export function hiddenMemories(): readonly PendingMemory[] {
  return state.hidden;
}

export function undoToast(): { key: number; text: string } | null {
  return state.toast;
}

/**
 * Run `listener` after each batch the core deleted (or refused to), before the memories stop
 * being hidden: a screen reloads there, so nothing flashes back. Returns the unsubscriber.
 */
export function onSettled(listener: SettledListener): () => void {
  listeners = [...listeners, listener];
  return () => {
    listeners = listeners.filter((l) => l !== listener);
  };
}

export function deletedText(count: number): string {
  return count === 1 ? 'Memory deleted' : `${count} memories deleted`;
}

function listen(): void {
  if (listening || typeof window === 'undefined') return;
  listening = true;
  const flush = (): void => flushDeletes();
  window.addEventListener('pagehide', flush);
  window.addEventListener('beforeunload', flush);
}

async function commit(batch: Batch): Promise<void> {
  clearTimeout(batch.timer);
  if (current?.key === batch.key) current = null;
  if (state.toast?.key === batch.key) state.toast = null;
  const ids = batch.memories.map((m) => m.id);
  let deleted = false;
  try {
    await call('delete_memories', { ids });
    deleted = true;
  } catch (reason) {
    const error = toErrorDto(reason);
    notify(`Couldn't delete: ${error.message}`, 'error', 6000);
  }
  await Promise.allSettled(listeners.map((listener) => listener(ids, deleted)));
  state.hidden = state.hidden.filter((m) => !ids.includes(m.id));
}

/** Hide these memories now and delete them for real once Undo is no longer offered. */
export function scheduleDelete(memories: PendingMemory[]): void {
  if (memories.length === 0) return;
  listen();
  if (current) void commit(current);
  const batch: Batch = { key: nextKey++, memories: [...memories], timer: undefined };
  current = batch;
  const ids = memories.map((m) => m.id);
  state.hidden = [...state.hidden.filter((m) => !ids.includes(m.id)), ...memories];
  state.toast = { key: batch.key, text: deletedText(memories.length) };
  batch.timer = setTimeout(() => void commit(batch), delay);
}

/** Undo the pending delete: the memories come back; the core is never asked. */
export function undoDelete(): PendingMemory[] {
  const batch = current;
  if (!batch) return [];
  clearTimeout(batch.timer);
  current = null;
  state.toast = null;
  const ids = batch.memories.map((m) => m.id);
  state.hidden = state.hidden.filter((m) => !ids.includes(m.id));
  return batch.memories;
}

/** Delete now what is waiting (leaving the screen, closing the window). */
export function flushDeletes(): void {
  if (current) void commit(current);
}
