/**
 * A conversation the main window was asked to show (the `open_conversation` event, sent when
 * the quick prompt's "Open in Hearth" is used). App records it and routes to Chat; the Chat
 * screen takes it once it is mounted (or right away if it already is).
 */
const pending = $state<{ id: string | null }>({ id: null });

export function requestOpen(conversationId: string): void {
  pending.id = conversationId;
}

/** The requested conversation id, if any (reactive: an effect that reads it reruns on a new request). */
export function pendingOpen(): string | null {
  return pending.id;
}

/** Clear the request once it has been handled. */
export function clearPendingOpen(): void {
  pending.id = null;
}
