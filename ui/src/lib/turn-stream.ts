/**
 * The turn-event protocol, shared by the Chat screen and the quick prompt.
 *
 * A command (`send_message`, `regenerate`, `edit_last_message`) returns a turn id; the answer
 * then streams as `chat_token` events for that id and ends with one `chat_done` or
 * `chat_failed`. Between the pieces, the model may call tools: `chat_tool_started` when it
 * asked for one (the consent gate checks it; it may wait for the user's answer in the consent
 * window) and `chat_tool` when the call ended, both before `chat_done`, whose `tool_calls` are
 * the truth. Events may arrive before the command has returned: a `TurnStream` buffers them
 * until `started(turnId)` and then replays them. A stop asked for before the id is known is
 * sent (`stop_turn`) as soon as it is.
 *
 * Usage: make one `TurnStream` per turn with its handlers, keep it as "the current turn", and
 * route the core's events to it with `listenToTurns(() => current)`.
 */
import type { ChatDoneEvent } from './bindings/ChatDoneEvent';
import type { ChatEscalatingEvent } from './bindings/ChatEscalatingEvent';
import type { ChatFailedEvent } from './bindings/ChatFailedEvent';
import type { ChatTokenEvent } from './bindings/ChatTokenEvent';
import type { ChatToolEvent } from './bindings/ChatToolEvent';
import type { ChatToolStartedEvent } from './bindings/ChatToolStartedEvent';
import type { ChatWaitingEvent } from './bindings/ChatWaitingEvent';
import { call, subscribe, toErrorDto, type ErrorDto } from './ipc';
import { entriesFrom, withEnded, withStarted, type ToolCallDto, type ToolCallEntry } from './tool-calls';

export type TurnEvent =
  | { kind: 'token'; event: ChatTokenEvent }
  | { kind: 'tool_started'; event: ChatToolStartedEvent }
  | { kind: 'tool'; event: ChatToolEvent }
  | { kind: 'escalating'; event: ChatEscalatingEvent }
  | { kind: 'waiting'; event: ChatWaitingEvent }
  | { kind: 'done'; event: ChatDoneEvent }
  | { kind: 'failed'; event: ChatFailedEvent };

export type TurnHandlers = {
  /** A piece of the answer: `piece` is new, `text` is the whole answer so far. */
  token(piece: string, text: string): void;
  /**
   * The model asked for a tool (`chat_tool_started`); the gate is checking it, it may wait for
   * the user, then it runs. `calls` is every call of the turn so far, in order (a new array).
   */
  toolStarted?(event: ChatToolStartedEvent, calls: ToolCallEntry[]): void;
  /** A tool call ended (`chat_tool`): decided, and run or not. `calls` as above. */
  toolEnded?(call: ToolCallDto, calls: ToolCallEntry[]): void;
  /**
   * Cascade (`chat_escalating`): the fast model's answer failed a check and the strong model
   * answers again; `first` is the fast answer as it streamed. The text so far and the tool
   * calls start over (`token` is called with an empty `text` right after).
   */
  escalating?(event: ChatEscalatingEvent, first: string): void;
  /**
   * The next call waits about `event.seconds` for the provider's rate limit
   * (`chat_waiting`); it goes on by itself. Cleared by the next token or the end.
   */
  waiting?(event: ChatWaitingEvent): void;
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
  /** The turn's tool calls so far, in order (from `chat_done` once it is done). */
  toolCalls: ToolCallEntry[] = [];
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
      case 'tool_started':
        this.toolCalls = withStarted(this.toolCalls, item.event.call_id, item.event.tool);
        this.handlers.toolStarted?.(item.event, this.toolCalls);
        break;
      case 'tool':
        this.toolCalls = withEnded(this.toolCalls, item.event.call);
        this.handlers.toolEnded?.(item.event.call, this.toolCalls);
        break;
      case 'escalating': {
        const first = this.text;
        this.text = '';
        this.toolCalls = [];
        this.handlers.escalating?.(item.event, first);
        this.handlers.token('', '');
        break;
      }
      case 'waiting':
        this.handlers.waiting?.(item.event);
        break;
      case 'done':
        this.ended = true;
        this.text = item.event.answer;
        this.toolCalls = entriesFrom(item.event.tool_calls);
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
 * Route `chat_token` / `chat_tool_started` / `chat_tool` / `chat_escalating` / `chat_waiting`
 * / `chat_done` / `chat_failed` to the
 * turn `current()` returns (if any).
 * Returns a synchronous disposer (for component effects and `onMount`).
 */
export function listenToTurns(current: () => TurnStream | null | undefined): () => void {
  const route = (item: TurnEvent): void => current()?.handle(item);
  const stops = [
    subscribe('chat_token', (event) => route({ kind: 'token', event })),
    subscribe('chat_tool_started', (event) => route({ kind: 'tool_started', event })),
    subscribe('chat_tool', (event) => route({ kind: 'tool', event })),
    subscribe('chat_escalating', (event) => route({ kind: 'escalating', event })),
    subscribe('chat_waiting', (event) => route({ kind: 'waiting', event })),
    subscribe('chat_done', (event) => route({ kind: 'done', event })),
    subscribe('chat_failed', (event) => route({ kind: 'failed', event })),
  ];
  return () => stops.forEach((stop) => stop());
}
