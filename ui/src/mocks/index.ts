/**
 * A fake core for browser tests and `npm run dev:mock`. Loaded only when
 * `import.meta.env.MODE === 'mock'` (dynamic import), so it never ships in `dist/`.
 *
 * The handler table is typed from the generated bindings: adding, removing or changing a
 * command or a DTO in Rust (and regenerating the bindings) breaks `npm run check` here.
 *
 * Test hooks on `window`:
 *   __ipcCalls  every command invoked, in order: { cmd, args }
 *   __hearthMock.emit(event, payload)  emit a core event
 *   __hearthMock.setStatus(patch)      change what get_status returns next
 *   __hearthMock.setChatDelay(ms)      time between streamed chat_token pieces (default 120)
 *
 * Chat: `send_message` answers with MOCK_ANSWER, emitted as a few `chat_token` pieces and
 * then `chat_done` (asynchronously, after the command returned its turn id); `stop_turn`
 * ends the stream early with `stopped: true`. The same works in quick.html (the quick prompt
 * sends with `conversationId: null`, so each question starts a new conversation).
 * `open_in_main` is recorded and emits `open_conversation`.
 */
import { clearMocks, mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import type { ChatStatusDto } from '../lib/bindings/ChatStatusDto';
import type { Commands, Events } from '../lib/bindings/commands';
import type { ConversationDto } from '../lib/bindings/ConversationDto';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { MessageDto } from '../lib/bindings/MessageDto';
import type { ShortcutStatus } from '../lib/bindings/ShortcutStatus';
import type { StatusDto } from '../lib/bindings/StatusDto';

export const SCENARIOS = [
  'ok',
  'shortcut-taken',
  'startup-error',
  'key-file',
  'no-provider',
  'chat-fails',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export type Handlers = {
  [K in keyof Commands]: (
    args: Commands[K]['args'],
  ) => Commands[K]['result'] | Promise<Commands[K]['result']>;
};

export type IpcCall = { cmd: string; args: unknown };

export type MockControl = {
  scenario: Scenario;
  /** What get_status returns now (a copy). */
  status(): StatusDto;
  emit<K extends keyof Events>(event: K, payload: Events[K]): Promise<void>;
  setStatus(patch: Partial<StatusDto>): void;
  setChatDelay(ms: number): void;
};

declare global {
  interface Window {
    __ipcCalls?: IpcCall[];
    __hearthMock?: MockControl;
  }
}

export const MOCK_STATUS: StatusDto = {
  data_dir: '/home/alex/.local/share/hearth',
  db_path: '/home/alex/.local/share/hearth/hearth.db',
  db_id: '6f1c2a9e-3b7d-4e52-9a08-d4c1f27b8e63',
  schema_version: 3,
  sqlite_version: '3.46.1',
  sqlcipher_version: '4.6.1 community',
  sqlite_vec_version: 'v0.1.6',
  key_backend: 'os-keyring',
  encrypted: true,
  fts5: true,
  vec0: true,
  warnings: [],
};

export const KEY_FILE_WARNING =
  'No system keyring is available, so the database key is stored in a plain file next to the database (/home/alex/.local/share/hearth/hearth.key). Anyone who can read your files can read your data.';

export const STARTUP_ERROR: ErrorDto = {
  code: 'key_missing',
  message:
    "Hearth found your database but not its key in the system keyring. If you moved Hearth's data from another computer, restore the key there first; Hearth won't create a new key over existing data.",
};

export const READY_CHAT: ChatStatusDto = {
  ready: true,
  provider: 'local',
  model: 'llama3.2',
  hint: null,
};

export const NO_PROVIDER_CHAT: ChatStatusDto = {
  ready: false,
  provider: null,
  model: null,
  hint: 'No model provider is set up yet. Add one from a terminal, then come back here.',
};

export const CHAT_FAILURE: ErrorDto = {
  code: 'provider_auth',
  message: 'TestProvider rejected the request (401): check your API key for TestProvider',
};

/** What the mock model answers, streamed in these pieces. */
export const MOCK_ANSWER_PIECES = [
  'Good question. ',
  'Here is a short plan:\n',
  '1. Start with what you already know.\n',
  '2. Take the next step ',
  'and check how it went.',
];

const MINUTE = 60_000;

type StoredConversation = ConversationDto & { log: MessageDto[] };

function seedConversations(now: number): StoredConversation[] {
  const recipes: MessageDto[] = [
    { id: 1, role: 'user', content: 'What can I cook tonight with chickpeas and spinach?', state: 'complete' },
    {
      id: 2,
      role: 'assistant',
      content:
        'A quick chana saag works well:\n\n1. Fry an onion, garlic and ginger.\n2. Add cumin, garam masala and the chickpeas.\n3. Stir in the spinach until it wilts, then finish with lemon.',
      state: 'complete',
    },
  ];
  const trip: MessageDto[] = [
    { id: 3, role: 'user', content: 'Plan three days in Lisbon for me.', state: 'complete' },
    {
      id: 4,
      role: 'assistant',
      content: 'Day 1: Alfama and the castle in the morning, then a tram ride to',
      state: 'interrupted',
    },
  ];
  return [
    { id: 'c-recipes', title: 'Dinner with chickpeas', updated_at: now - 2 * 60 * MINUTE, messages: 2, log: recipes },
    { id: 'c-lisbon', title: 'Three days in Lisbon', updated_at: now - 26 * 60 * MINUTE, messages: 2, log: trip },
  ];
}

export const DEFAULT_ACCELERATOR = 'CommandOrControl+Shift+Space';

const MODIFIERS = new Set(
  [
    'CommandOrControl',
    'CmdOrCtrl',
    'CommandOrCtrl',
    'CmdOrControl',
    'Control',
    'Ctrl',
    'Command',
    'Cmd',
    'Super',
    'Meta',
    'Alt',
    'Option',
    'Shift',
  ].map((m) => m.toLowerCase()),
);

const KEY = /^(?:[A-Z0-9]|F(?:[1-9]|1[0-9]|2[0-4])|Space|Enter|Tab|Backspace|Delete|Insert|Home|End|PageUp|PageDown|Up|Down|Left|Right|Comma|Period|Slash|Backslash|Semicolon|Quote|Backquote|Minus|Equal|BracketLeft|BracketRight|Numpad[0-9])$/i;

/** Roughly what the shell accepts: modifiers + exactly one key (function keys may stand alone). */
function validAccelerator(accelerator: string): boolean {
  const parts = accelerator.split('+').map((p) => p.trim());
  if (parts.some((p) => p === '')) return false;
  const key = parts[parts.length - 1] ?? '';
  const mods = parts.slice(0, -1);
  if (!KEY.test(key)) return false;
  if (!mods.every((m) => MODIFIERS.has(m.toLowerCase()))) return false;
  return mods.length > 0 || /^F\d+$/i.test(key);
}

export function scenarioFromLocation(location: Location = window.location): Scenario {
  const requested = new URLSearchParams(location.search).get('scenario') ?? 'ok';
  if ((SCENARIOS as readonly string[]).includes(requested)) return requested as Scenario;
  console.warn(`Hearth mocks: unknown scenario "${requested}", using "ok".`);
  return 'ok';
}

function windowLabelFromLocation(): 'main' | 'quick' {
  return /quick\.html$/.test(window.location.pathname) ? 'quick' : 'main';
}

export function installMocks(
  scenario: Scenario,
  windowLabel: 'main' | 'quick' = windowLabelFromLocation(),
): MockControl {
  clearMocks();

  let status: StatusDto = {
    ...MOCK_STATUS,
    ...(scenario === 'key-file'
      ? { key_backend: 'file', warnings: [KEY_FILE_WARNING] }
      : {}),
  };

  let shortcut: ShortcutStatus =
    scenario === 'shortcut-taken'
      ? {
          accelerator: DEFAULT_ACCELERATOR,
          registered: false,
          error: 'HotKey already registered by another application',
        }
      : { accelerator: DEFAULT_ACCELERATOR, registered: true, error: null };

  const chatStatus: ChatStatusDto = scenario === 'no-provider' ? NO_PROVIDER_CHAT : READY_CHAT;
  const conversations: StoredConversation[] = scenario === 'ok' ? seedConversations(Date.now()) : [];
  let nextMessageId = 100;
  let nextTurnId = 1;
  let chatDelay = 120;
  const stopRequested = new Set<number>();

  const listing = (): ConversationDto[] =>
    [...conversations]
      .sort((a, b) => b.updated_at - a.updated_at)
      .map(({ id, title, updated_at, messages }) => ({ id, title, updated_at, messages }));

  function find(conversationId: string): StoredConversation {
    const conversation = conversations.find((c) => c.id === conversationId);
    if (!conversation) {
      const error: ErrorDto = { code: 'not_found', message: `No conversation "${conversationId}".` };
      throw error;
    }
    return conversation;
  }

  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  /** Stream the answer for one turn (runs after send_message has returned). */
  async function streamTurn(turnId: number, conversation: StoredConversation | null, question: string): Promise<void> {
    await sleep(chatDelay);
    if (scenario === 'chat-fails') {
      await emit('chat_failed', { turn_id: turnId, ...CHAT_FAILURE });
      return;
    }
    let answer = '';
    let stopped = false;
    for (const piece of MOCK_ANSWER_PIECES) {
      if (stopRequested.has(turnId)) {
        stopped = true;
        break;
      }
      answer += piece;
      await emit('chat_token', { turn_id: turnId, text: piece });
      await sleep(chatDelay);
    }
    if (stopRequested.has(turnId)) stopped = true;
    if (conversation) {
      conversation.log.push({ id: nextMessageId++, role: 'assistant', content: answer, state: stopped ? 'stopped' : 'complete' });
      conversation.messages = conversation.log.length;
      conversation.updated_at = Date.now();
    }
    await emit('chat_done', {
      turn_id: turnId,
      conversation_id: conversation?.id ?? null,
      answer,
      stopped,
      input_tokens: 40 + Math.ceil(question.length / 4),
      output_tokens: answer.split(/\s+/).filter(Boolean).length,
    });
  }

  const handlers: Handlers = {
    get_status: () => {
      if (scenario === 'startup-error') return Promise.reject(STARTUP_ERROR);
      return structuredClone(status);
    },
    get_shortcut: () => ({ ...shortcut }),
    set_shortcut: async ({ accelerator }) => {
      if (!validAccelerator(accelerator)) {
        const error: ErrorDto = {
          code: 'invalid_accelerator',
          message: `"${accelerator}" isn't a shortcut Hearth understands. Combine modifiers such as CommandOrControl, Alt or Shift with one key, like CommandOrControl+Shift+Space.`,
        };
        throw error;
      }
      shortcut = { accelerator, registered: true, error: null };
      await emit('shortcut_changed', { ...shortcut });
      return { ...shortcut };
    },
    toggle_quick_prompt: () => null,
    hide_quick_prompt: () => null,
    show_main_window: () => null,
    chat_status: () => ({ ...chatStatus }),
    list_conversations: () => listing(),
    get_messages: ({ conversationId }) => structuredClone(find(conversationId).log),
    send_message: ({ conversationId, text, temporary }) => {
      if (!chatStatus.ready) {
        const error: ErrorDto = { code: 'no_provider', message: chatStatus.hint ?? 'No model provider.' };
        throw error;
      }
      let conversation: StoredConversation | null = null;
      // chat-fails: the provider refuses before anything is stored.
      if (!temporary && scenario !== 'chat-fails') {
        if (conversationId === null) {
          const title = text.trim().split('\n')[0]?.slice(0, 48) ?? 'New chat';
          conversation = { id: `c-${Date.now()}-${nextTurnId}`, title, updated_at: Date.now(), messages: 0, log: [] };
          conversations.push(conversation);
        } else {
          conversation = find(conversationId);
        }
        conversation.log.push({ id: nextMessageId++, role: 'user', content: text, state: 'complete' });
        conversation.messages = conversation.log.length;
        conversation.updated_at = Date.now();
      }
      const turnId = nextTurnId++;
      void streamTurn(turnId, conversation, text);
      return { turn_id: turnId };
    },
    stop_turn: ({ turnId }) => {
      stopRequested.add(turnId);
      return null;
    },
    delete_conversation: ({ conversationId }) => {
      const index = conversations.findIndex((c) => c.id === conversationId);
      if (index >= 0) conversations.splice(index, 1);
      return null;
    },
    // The real shell shows the main window and emits `open_conversation` to it. Here both
    // windows are separate pages, so the event is emitted to this page (tests emit it in main).
    open_in_main: async ({ conversationId }) => {
      await emit('open_conversation', { conversation_id: conversationId });
      return null;
    },
  };

  const calls: IpcCall[] = [];
  window.__ipcCalls = calls;

  mockWindows(windowLabel, windowLabel === 'main' ? 'quick' : 'main');
  mockIPC(
    (cmd, payload) => {
      calls.push({ cmd, args: payload ?? {} });
      if (!(cmd in handlers)) {
        const error: ErrorDto = { code: 'unknown_command', message: `The mock core has no command "${cmd}".` };
        return Promise.reject(error);
      }
      const handler = handlers[cmd as keyof Commands] as (args: unknown) => unknown;
      try {
        return Promise.resolve(handler(payload ?? {}));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    { shouldMockEvents: true },
  );

  const control: MockControl = {
    scenario,
    status: () => structuredClone(status),
    emit: (event, payload) => emit(event, payload),
    setStatus: (patch) => {
      status = { ...status, ...patch };
    },
    setChatDelay: (ms) => {
      chatDelay = ms;
    },
  };
  window.__hearthMock = control;
  return control;
}
