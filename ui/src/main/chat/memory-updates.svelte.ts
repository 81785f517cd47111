/**
 * What the assistant changed in memory after an answer (`memory_updated`), kept per answer
 * (message id) for the window's lifetime so the "Memory updated" chip survives switching
 * conversations or screens. Each change remembers whether the user undid it (or, for a
 * proposal to change a pinned or critical memory, accepted or rejected it).
 */
import type { MemoryChangeDto } from '../../lib/bindings/MemoryChangeDto';
import type { MemoryUpdatedEvent } from '../../lib/bindings/MemoryUpdatedEvent';

export type ChipChange = {
  change: MemoryChangeDto;
  /**
   * idle → undoing → undone, or for a proposal idle → accepting / rejecting → accepted /
   * rejected; `error` holds why the last step failed.
   */
  state: 'idle' | 'undoing' | 'undone' | 'accepting' | 'accepted' | 'rejecting' | 'rejected';
  error: string | null;
};

export type MemoryUpdate = { conversationId: string; messageId: number; changes: ChipChange[] };

const updates = $state<Record<number, MemoryUpdate>>({});

/** Record an event for the answer `messageId` (a second event for the same answer adds to it). */
export function recordMemoryUpdate(event: MemoryUpdatedEvent, messageId: number): void {
  const changes = event.changes.map((change): ChipChange => ({ change, state: 'idle', error: null }));
  if (changes.length === 0) return;
  const existing = updates[messageId];
  if (existing) existing.changes.push(...changes);
  else updates[messageId] = { conversationId: event.conversation_id, messageId, changes };
}

/** The update shown under the answer `messageId`, if any (reactive). */
export function memoryUpdateFor(messageId: number | null): MemoryUpdate | undefined {
  return messageId === null ? undefined : updates[messageId];
}
