/**
 * The turn-event protocol, shared by the Chat screen and the quick prompt.
 *
 * A command (`send_message`, `regenerate`, `edit_last_message`) returns a turn id; the answer
 * then streams as `chat_token` events for that id and ends with one `chat_done` or
 * `chat_failed`. Events may arrive before the command has returned: a `TurnStream` buffers
 * them until `started(turnId)` and then replays them. A stop asked for before the id is known
 * is sent (`stop_turn`) as soon as it is.
 *
 * Usage: make one `TurnStream` per turn with its handlers, keep it as "the current turn", and
 * route the core's events to it with `listenToTurns(() => current)`.
 */
import type { ChatDoneEvent } from './bindings/ChatDoneEvent';
import type { ChatFailedEvent } from './bindings/ChatFailedEvent';
import type { ChatTokenEvent } from './bindings/ChatTokenEvent';
import { call, subscribe, toErrorDto, type ErrorDto } from './ipc';

export type TurnEvent =
  | { kind: 'token'; event: ChatTokenEvent }
  | { kind: 'done'; event: ChatDoneEvent }
  | { kind: 'failed'; event: ChatFailedEvent };

export type TurnHandlers = {
  /** A piece of the answer: `piece` is new, `text` is the whole answer so far. */
  token(piece: string, text: string): void;
  /** The turn finished (possibly stopped: `event.stopped`). */
  done(event: ChatDoneEvent): void;
  /** The turn failed. */
  failed(error: ErrorDto): void;
  /** A `stop_turn` went out: null when the core took it, else why not. */
  stopped?(error: ErrorDto | null): void;
};

export class TurnStream {
  /** null until the command that started the turn returned. */
  id: number | null = null;
  /** The answer so far. */
  text = '';
  private buffered: TurnEvent[] = [];
  private stopRequested = false;
  private ended = false;
  private readonly handlers: TurnHandlers;

  constructor(handlers: TurnHandlers) {
    this.handlers = handlers;
  }

  /** Done or failed: later events are ignored. */
  get finished(): boolean {
    return this.ended;
  }

  /** The core accepted the turn: events buffered so far are replayed, a pending stop is sent. */
  started(turnId: number): void {
    this.id = turnId;
    const buffered = this.buffered;
    this.buffered = [];
    for (const item of buffered) this.handle(item);
    if (this.stopRequested && !this.ended) void this.stop();
  }

  /** Ask the core to stop this turn (now, or once its id is known). */
  async stop(): Promise<void> {
    if (this.ended) return;
    this.stopRequested = true;
    if (this.id === null) return;
    let error: ErrorDto | null = null;
    try {
      await call('stop_turn', { turnId: this.id });
    } catch (reason) {
      error = toErrorDto(reason);
    }
    this.handlers.stopped?.(error);
  }

  /** One event from the core (any turn's: others are ignored). */
  handle(item: TurnEvent): void {
    if (this.ended) return;
    if (this.id === null) {
      this.buffered.push(item);
      return;
    }
    if (item.event.turn_id !== this.id) return;
    switch (item.kind) {
      case 'token':
        this.text += item.event.text;
        this.handlers.token(item.event.text, this.text);
        break;
      case 'done':
        this.ended = true;
        this.text = item.event.answer;
        this.handlers.done(item.event);
        break;
      case 'failed':
        this.ended = true;
        this.handlers.failed({ code: item.event.code, message: item.event.message });
        break;
    }
  }
}

/**
 * Route `chat_token` / `chat_done` / `chat_failed` to the turn `current()` returns (if any).
 * Returns a synchronous disposer (for component effects and `onMount`).
 */
export function listenToTurns(current: () => TurnStream | null | undefined): () => void {
  const route = (item: TurnEvent): void => current()?.handle(item);
  const stops = [
    subscribe('chat_token', (event) => route({ kind: 'token', event })),
    subscribe('chat_done', (event) => route({ kind: 'done', event })),
    subscribe('chat_failed', (event) => route({ kind: 'failed', event })),
  ];
  return () => stops.forEach((stop) => stop());
}
