/**
 * A conversation the main window was asked to show: the `open_conversation` event (the quick
 * prompt's "Open in Hearth"), or a memory's provenance on the Memory screen ("Learned in
 * conversation … — Open"), which also names the message to scroll to and highlight.
 * The asker routes to Chat; the Chat screen takes the request once it is mounted (or right
 * away if it already is).
 */
export type OpenRequest = { id: string; messageId: number | null };

const pending = $state<{ request: OpenRequest | null }>({ request: null });

export function requestOpen(conversationId: string, messageId: number | null = null): void {
  pending.request = { id: conversationId, messageId };
}

/** The request, if any (reactive: an effect that reads it reruns on a new request). */
export function pendingOpen(): OpenRequest | null {
  return pending.request;
}

/** Clear the request once it has been handled. */
export function clearPendingOpen(): void {
  pending.request = null;
}
