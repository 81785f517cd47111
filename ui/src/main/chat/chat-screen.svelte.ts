/**
 * The state of the Chat screen (../screens/Chat.svelte) and what it does: the model's status,
 * the saved conversations, the open conversation's messages, the turn that streams an answer
 * (send, Regenerate, Edit & resend; events through ../../lib/turn-stream), Temporary chat,
 * the context panel's selection, a message asked for from outside (../chat/open.svelte.ts)
 * and where focus goes.
 *
 * One instance per mounted screen: construct it while the component initialises (its
 * effects belong to the component) and call `start()` from `onMount` (it returns the cleanup).
 */
import { tick, untrack } from 'svelte';
import type { ChatDoneEvent } from '../../lib/bindings/ChatDoneEvent';
import type { ChatStatusDto } from '../../lib/bindings/ChatStatusDto';
import type { ConversationDto } from '../../lib/bindings/ConversationDto';
import type { MemoryUpdatedEvent } from '../../lib/bindings/MemoryUpdatedEvent';
import type { MessageDto } from '../../lib/bindings/MessageDto';
import type { SendResultDto } from '../../lib/bindings/SendResultDto';
import type { TierDto } from '../../lib/bindings/TierDto';
import { call, subscribe, toErrorDto, type ErrorDto } from '../../lib/ipc';
import { isMac } from '../../lib/platform';
import { notify } from '../../lib/toast.svelte';
import { entriesFrom } from '../../lib/tool-calls';
import { TurnStream, listenToTurns } from '../../lib/turn-stream';
import { improving, waitingText } from '../../lib/turn';
import { recordMemoryUpdate } from './memory-updates.svelte';
import { clearPendingOpen, pendingOpen } from './open.svelte';
import type { Message } from './types';

type Turn = {
  /** The turn's events (buffered until the command returns; see ../../lib/turn-stream). */
  stream: TurnStream;
  /** What started it: a new message, Regenerate, or Edit & resend. */
  kind: 'send' | 'regenerate' | 'edit';
  /** For a new message: its text, where it went, and whether it was a temporary chat. */
  sent?: { text: string; temporary: boolean; tier: TierDto };
  /** For a new message: the key of the question it added to the log. */
  questionKey?: string;
  /** The conversation it runs in (null: a new or temporary chat). */
  conversationId: string | null;
  /** The assistant message this turn fills. */
  key: string;
  /** The view the turn started in; a turn only selects its conversation if still shown. */
  view: number;
};

function lastIndex(list: Message[], test: (m: Message) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i] as Message)) return i;
  return -1;
}

const streamingMessage = (assistantKey: string): Message => ({
  key: assistantKey,
  id: null,
  role: 'assistant',
  content: '',
  state: 'streaming',
  turn: null,
  sources: [],
  toolCalls: [],
  stopReason: null,
});

export class ChatScreen {
  readonly mac = isMac();

  status = $state<ChatStatusDto | null>(null);
  statusError = $state<ErrorDto | null>(null);
  conversations = $state<ConversationDto[]>([]);
  listError = $state<ErrorDto | null>(null);
  activeId = $state<string | null>(null);
  messages = $state<Message[]>([]);
  loadingMessages = $state(false);
  error = $state<ErrorDto | null>(null);
  draft = $state('');
  temporary = $state(false);
  /** The model chosen in the composer for the next message (back to `auto` once sent). */
  tier = $state<TierDto>('auto');
  turn = $state<Turn | null>(null);
  contextOpen = $state(false);
  /** The answer the context panel shows; null = the latest one. */
  contextKey = $state<string | null>(null);
  /** A Regenerate or Edit failed: the core already dropped the old answer, so offer to try again. */
  retryable = $state(false);
  /**
   * A message a spending cap held back (nothing was stored): its text, for "Send this message
   * anyway". Shown with the error until the next message.
   */
  overBudget = $state<{
    text: string;
    temporary: boolean;
    conversationId: string | null;
    tier: TierDto;
  } | null>(null);
  /** The stored message a memory's "Open" asked to show. */
  highlightId = $state<number | null>(null);

  composer: HTMLTextAreaElement | undefined = $state();
  log: HTMLDivElement | undefined = $state();
  contextToggle: HTMLButtonElement | undefined = $state();
  private stickToBottom = true;
  private view = 0;
  private nextKey = 0;

  readonly ready = $derived(this.status?.ready === true);
  readonly streaming = $derived(this.turn !== null);
  readonly active = $derived(this.conversations.find((c) => c.id === this.activeId) ?? null);
  readonly paneTitle = $derived(
    this.active?.title ?? (this.temporary ? 'Temporary chat' : this.activeId === null ? 'New chat' : 'Conversation'),
  );
  readonly canSend = $derived(this.ready && !this.streaming && this.draft.trim() !== '');
  readonly firstRun = $derived(
    this.status !== null && !this.status.ready && this.messages.length === 0 && this.statusError === null,
  );
  /** Regenerate and Edit need a saved conversation, a model, and no turn running. */
  readonly canRework = $derived(
    this.ready && !this.streaming && !this.temporary && this.activeId !== null && !this.loadingMessages,
  );
  readonly lastMessage = $derived(this.messages.at(-1) ?? null);
  readonly lastUserKey = $derived(this.messages[lastIndex(this.messages, (m) => m.role === 'user')]?.key ?? null);

  readonly latestWithTurn = $derived(
    this.messages[lastIndex(this.messages, (m) => m.role === 'assistant' && m.turn !== null)] ?? null,
  );
  readonly contextMessage = $derived(
    (this.contextKey !== null
      ? this.messages.find((m) => m.key === this.contextKey && m.role === 'assistant')
      : undefined) ?? this.latestWithTurn,
  );

  constructor() {
    // Keep the newest text in view while it streams (unless the reader scrolled up).
    $effect(() => {
      let size = this.messages.length;
      for (const m of this.messages) {
        size += m.content.length;
        for (const entry of m.toolCalls) size += entry.call === null ? 1 : 2;
      }
      void size;
      if (!this.log || !this.stickToBottom) return;
      const el = this.log;
      void tick().then(() => {
        requestAnimationFrame(() => {
          if (this.stickToBottom) el.scrollTop = el.scrollHeight;
        });
      });
    });

    // A conversation asked for from outside (the quick prompt's "Open in Hearth"): refresh the
    // list (it may be new) and open it, even if it is the one already shown.
    $effect(() => {
      const requested = pendingOpen();
      if (requested === null) return;
      untrack(() => {
        clearPendingOpen();
        void this.loadList();
        void this.select(requested.id, true).then(() => {
          if (requested.messageId !== null && this.activeId === requested.id) {
            void this.highlight(requested.messageId, this.view);
          }
        });
      });
    });
  }

  /** First reads and the core's events; returns what to do when the screen closes. */
  start(): () => void {
    void this.loadStatus();
    void this.loadList();
    const stops = [
      listenToTurns(() => this.turn?.stream),
      subscribe('memory_updated', (event) => this.onMemoryUpdated(event)),
      subscribe('store_changed', () => {
        void this.loadStatus();
        void this.loadList();
      }),
    ];
    return () => stops.forEach((stopListening) => stopListening());
  }

  private key(): string {
    return `m${++this.nextKey}`;
  }

  private fromDto(dto: MessageDto): Message {
    return {
      key: this.key(),
      id: dto.id,
      role: dto.role === 'user' ? 'user' : 'assistant',
      content: dto.content,
      state: dto.state,
      turn: dto.turn,
      sources: dto.sources,
      toolCalls: entriesFrom(dto.tool_calls),
      stopReason: dto.turn?.stop_reason ?? null,
    };
  }

  /**
   * Take the stored messages, keeping the keys of the ones already shown (no re-render, the
   * context selection survives). `done` fills in the turn of the answer it finished if the
   * stored one has none, and why its run ended.
   */
  private adopt(list: MessageDto[], done?: ChatDoneEvent): Message[] {
    return list.map((dto, i) => {
      const message = this.fromDto(dto);
      const old = this.messages[i];
      if (old && old.role === message.role && (old.id === dto.id || old.content === dto.content)) message.key = old.key;
      if (done && done.message_id !== null && dto.id === done.message_id) {
        if (message.turn === null) message.turn = done.turn;
        message.stopReason = done.stop_reason;
      }
      return message;
    });
  }

  // ---- Loading ----

  readonly loadStatus = async (): Promise<void> => {
    try {
      this.status = await call('chat_status');
      this.statusError = null;
    } catch (reason) {
      this.statusError = toErrorDto(reason);
    }
  };

  private async loadList(): Promise<void> {
    try {
      this.conversations = await call('list_conversations');
      this.listError = null;
    } catch (reason) {
      this.listError = toErrorDto(reason);
    }
  }

  private async focusComposer(): Promise<void> {
    await tick();
    this.composer?.focus();
  }

  // ---- Conversations ----

  private startView(): number {
    this.view += 1;
    this.messages = [];
    this.error = null;
    this.loadingMessages = false;
    this.stickToBottom = true;
    this.contextKey = null;
    this.retryable = false;
    this.highlightId = null;
    return this.view;
  }

  readonly newChat = (): void => {
    this.startView();
    this.activeId = null;
    this.draft = '';
    if (this.ready) void this.focusComposer();
    else document.querySelector<HTMLElement>('#content h1')?.focus();
  };

  readonly select = async (id: string, reload = false): Promise<void> => {
    if (!reload && id === this.activeId && this.messages.length > 0) return;
    const mine = this.startView();
    this.activeId = id;
    this.temporary = false;
    this.loadingMessages = true;
    try {
      const list = await call('get_messages', { conversationId: id });
      if (mine === this.view) this.messages = list.map((dto) => this.fromDto(dto));
    } catch (reason) {
      if (mine === this.view) this.error = toErrorDto(reason);
    } finally {
      if (mine === this.view) this.loadingMessages = false;
    }
  };

  /** After Regenerate or Edit: the core replaced messages; show what it stored. */
  private async reloadMessages(conversationId: string, forView: number, done: ChatDoneEvent): Promise<void> {
    try {
      const list = await call('get_messages', { conversationId });
      if (forView === this.view && this.activeId === conversationId && this.turn === null) {
        this.messages = this.adopt(list, done);
      }
    } catch (reason) {
      if (forView === this.view) this.error = toErrorDto(reason);
    }
  }

  readonly remove = async (id: string, deleteMemories: boolean): Promise<boolean> => {
    try {
      await call('delete_conversation', { conversationId: id, deleteMemories });
    } catch (reason) {
      this.listError = toErrorDto(reason);
      return false;
    }
    this.conversations = this.conversations.filter((c) => c.id !== id);
    if (this.activeId === id) {
      this.startView();
      this.activeId = null;
    }
    void this.loadList();
    return true;
  };

  /** How many memories came from a conversation (offered for deletion with it); 0 if unknown. */
  readonly countMemories = async (id: string): Promise<number> => {
    try {
      return await call('count_conversation_memories', { conversationId: id });
    } catch {
      return 0;
    }
  };

  /** Show a stored message: scroll it into view, mark it and move focus to it. */
  private async highlight(messageId: number, forView: number): Promise<void> {
    if (forView !== this.view) return;
    if (!this.messages.some((m) => m.id === messageId)) {
      notify("That message isn't in this conversation any more.");
      return;
    }
    this.highlightId = messageId;
    this.stickToBottom = false;
    await tick();
    // After the app has focused this screen's <h1> (it does so on the route change).
    requestAnimationFrame(() => {
      if (forView !== this.view) return;
      const el = this.log?.querySelector<HTMLElement>(`article[data-message-id="${messageId}"]`);
      el?.scrollIntoView({ block: 'center' });
      el?.focus({ preventScroll: true });
    });
  }

  /** The answer a `memory_updated` is about: its message id, or the latest answer shown. */
  private onMemoryUpdated(event: MemoryUpdatedEvent): void {
    let messageId = event.message_id;
    if (messageId === null && event.conversation_id === this.activeId) {
      messageId = this.messages[lastIndex(this.messages, (m) => m.role === 'assistant' && m.id !== null)]?.id ?? null;
    }
    if (messageId !== null) recordMemoryUpdate(event, messageId);
  }

  /** Turning Temporary on leaves a saved conversation; turning it off leaves the temporary one. */
  readonly onTemporaryChange = (): void => {
    if (this.temporary && this.activeId !== null) {
      this.startView();
      this.activeId = null;
    } else if (!this.temporary && this.activeId === null && this.messages.length > 0) {
      this.startView();
    }
    void this.focusComposer();
  };

  // ---- Turns ----

  private assistantMessage(current: Turn): Message | undefined {
    return this.messages.find((m) => m.key === current.key);
  }

  /** A new turn filling the assistant message `assistantKey`, its events wired to this screen. */
  private newTurn(kind: Turn['kind'], conversationId: string | null, assistantKey: string): Turn {
    const current: Turn = {
      kind,
      conversationId,
      key: assistantKey,
      view: this.view,
      stream: new TurnStream({
        token: (_piece, soFar) => {
          const message = this.assistantMessage(current);
          if (message) {
            message.content = soFar;
            message.waiting = null;
          }
        },
        waiting: (event) => {
          const message = this.assistantMessage(current);
          if (message) message.waiting = waitingText(event);
        },
        escalating: (event, first) => {
          const message = this.assistantMessage(current);
          if (message) message.improving = improving(event, first);
          this.showToolCalls(current, []);
        },
        toolStarted: (_event, calls) => this.showToolCalls(current, calls),
        toolEnded: (_call, calls) => this.showToolCalls(current, calls),
        done: (done) => this.finish(current, done),
        failed: (failure) => this.finishWithError(failure),
        stopped: (refused) => {
          if (refused) this.error = refused;
          void this.focusComposer();
        },
      }),
    };
    return current;
  }

  /**
   * Run a turn: `request` starts it in the core. Resolves true once the core accepted it.
   * If it refuses, `restore` (when given) puts the messages back as they were.
   */
  private async runTurn(
    current: Turn,
    request: () => Promise<SendResultDto>,
    restore: Message[] | null,
  ): Promise<boolean> {
    this.turn = current;
    void this.focusComposer();
    try {
      const result = await request();
      if (this.turn === null || this.turn.key !== current.key) return true;
      current.stream.started(result.turn_id);
      return true;
    } catch (reason) {
      if (this.turn?.key !== current.key) return false;
      if (restore !== null) {
        this.turn = null;
        if (current.view === this.view) {
          this.messages = restore;
          this.error = toErrorDto(reason);
        }
      } else {
        this.finishWithError(toErrorDto(reason));
      }
      return false;
    }
  }

  readonly send = async (): Promise<void> => {
    const text = this.draft.trim();
    if (!this.ready || this.streaming || text === '') return;
    const tier = this.tier;
    this.tier = 'auto';
    await this.sendText(text, this.temporary ? null : this.activeId, this.temporary, false, tier);
  };

  /** "Send this message anyway": the message a spending cap held back, sent over the cap. */
  readonly sendAnyway = async (): Promise<void> => {
    const held = this.overBudget;
    if (!held || !this.ready || this.streaming) return;
    await this.sendText(held.text, held.conversationId, held.temporary, true, held.tier);
  };

  private async sendText(
    text: string,
    conversationId: string | null,
    isTemporary: boolean,
    overBudget: boolean,
    tier: TierDto,
  ): Promise<void> {
    const assistantKey = this.key();
    this.overBudget = null;
    this.error = null;
    this.retryable = false;
    this.stickToBottom = true;
    this.contextKey = null;
    this.highlightId = null;
    const questionKey = this.key();
    this.messages.push(
      {
        key: questionKey,
        id: null,
        role: 'user',
        content: text,
        state: 'complete',
        turn: null,
        sources: [],
        toolCalls: [],
        stopReason: null,
      },
      streamingMessage(assistantKey),
    );
    if (!overBudget || this.draft.trim() === text) this.draft = '';
    const current = this.newTurn('send', conversationId, assistantKey);
    current.sent = { text, temporary: isTemporary, tier };
    current.questionKey = questionKey;
    const args = {
      conversationId,
      text,
      temporary: isTemporary,
      ...(overBudget ? { overBudget: true } : {}),
      ...(tier === 'auto' ? {} : { tier }),
    };
    await this.runTurn(current, () => call('send_message', args), null);
  }

  /** Answer the last question again: replaces the last answer (or answers a question left without one). */
  readonly regenerate = async (): Promise<void> => {
    const conversationId = this.activeId;
    const lastMessage = this.lastMessage;
    if (!this.canRework || conversationId === null || lastMessage === null) return;
    const restore = [...this.messages];
    const assistantKey = this.key();
    this.error = null;
    this.retryable = false;
    this.stickToBottom = true;
    if (this.contextKey === lastMessage.key) this.contextKey = null;
    const kept = lastMessage.role === 'assistant' ? this.messages.slice(0, -1) : this.messages;
    this.messages = [...kept, streamingMessage(assistantKey)];
    const current = this.newTurn('regenerate', conversationId, assistantKey);
    await this.runTurn(current, () => call('regenerate', { conversationId }), restore);
  };

  readonly editLast = async (text: string): Promise<boolean> => {
    const conversationId = this.activeId;
    const index = lastIndex(this.messages, (m) => m.role === 'user');
    const original = this.messages[index];
    if (!this.canRework || conversationId === null || !original) return false;
    const restore = [...this.messages];
    const assistantKey = this.key();
    this.error = null;
    this.retryable = false;
    this.stickToBottom = true;
    this.contextKey = null;
    this.messages = [...this.messages.slice(0, index), { ...original, content: text }, streamingMessage(assistantKey)];
    const current = this.newTurn('edit', conversationId, assistantKey);
    return this.runTurn(current, () => call('edit_last_message', { conversationId, text }), restore);
  };

  readonly stop = async (): Promise<void> => {
    await this.turn?.stream.stop();
  };

  private showToolCalls(current: Turn, calls: Message['toolCalls']): void {
    const message = this.assistantMessage(current);
    if (message) message.toolCalls = calls;
  }

  private finish(current: Turn, done: ChatDoneEvent): void {
    const message = this.assistantMessage(current);
    if (message) {
      message.content = done.answer;
      message.state = done.stopped ? 'stopped' : 'complete';
      message.id = done.message_id;
      message.turn = done.turn;
      message.sources = done.sources;
      message.toolCalls = entriesFrom(done.tool_calls);
      message.stopReason = done.stop_reason;
      message.improving = null;
    }
    // A spending cap at 80 % or more: said once the answer is in.
    if (done.budget) notify(done.budget.text, 'info', 8000);
    this.turn = null;
    if (current.view === this.view && done.conversation_id !== null) this.activeId = done.conversation_id;
    if (current.kind !== 'send' && current.conversationId !== null) {
      void this.reloadMessages(current.conversationId, current.view, done);
    }
    void this.loadList();
  }

  private finishWithError(failure: ErrorDto): void {
    const current = this.turn;
    if (current) {
      const message = this.assistantMessage(current);
      // An answer with nothing to show goes; one whose tools ran stays, to say what they did.
      const ended = message?.toolCalls.filter((entry) => entry.call !== null) ?? [];
      if (message && message.content === '' && ended.length === 0) {
        this.messages = this.messages.filter((m) => m.key !== current.key);
      } else if (message) {
        message.state = 'failed';
        // A call still shown as running never ended: its outcome is unknown.
        message.toolCalls = ended;
      }
      // A spending cap held the message back: nothing was stored, so the question goes from
      // the log too, and the error offers to send it anyway.
      if (failure.code === 'over_budget' && current.sent) {
        const question = current.questionKey;
        this.messages = this.messages.filter((m) => m.key !== question && m.key !== current.key);
        this.overBudget = { ...current.sent, conversationId: current.conversationId };
        // The words stay in the composer, to send with another model or later.
        if (this.draft.trim() === '') this.draft = current.sent.text;
      }
      if (current.view === this.view) {
        this.error = failure;
        this.retryable = current.kind !== 'send' && current.conversationId !== null;
      }
    }
    this.turn = null;
    void this.loadList();
  }

  readonly onProviderReady = async (): Promise<void> => {
    await this.loadStatus();
    if (this.status?.ready) void this.focusComposer();
  };

  // ---- Context panel ----

  readonly toggleContext = async (): Promise<void> => {
    this.contextOpen = !this.contextOpen;
    if (this.contextOpen) this.contextKey = null;
  };

  async showContext(messageKey: string): Promise<void> {
    this.contextKey = messageKey;
    this.contextOpen = true;
    await tick();
    document.getElementById('context-title')?.focus();
  }

  readonly closeContext = async (): Promise<void> => {
    this.contextOpen = false;
    await tick();
    this.contextToggle?.focus();
  };

  // ---- Keyboard and scrolling ----

  readonly onWindowKeydown = (event: KeyboardEvent): void => {
    if (event.defaultPrevented || event.altKey || event.shiftKey) return;
    const primary = this.mac ? event.metaKey && !event.ctrlKey : event.ctrlKey && !event.metaKey;
    if (!primary || event.code !== 'KeyN') return;
    event.preventDefault();
    this.newChat();
  };

  readonly onLogScroll = (): void => {
    if (!this.log) return;
    this.stickToBottom = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 48;
  };
}
