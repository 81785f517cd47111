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
 *   __hearthMock.setLocalServers(list) what detect_local_servers finds from now on
 *   __hearthMock.failNextTurn()        the next turn ends with chat_failed (CHAT_FAILURE)
 *   __hearthMock.setUndoDelay(ms)      how long the Memory screen offers Undo before deleting (default 10 s)
 *   __hearthMock.memories()            every stored memory (any status), a copy
 *   __hearthMock.proposals()           the pending memory proposals (as list_memory_proposals returns them)
 *   __hearthMock.addMemoryElsewhere(text, kind)  another process adds a memory (then store_changed)
 *   __hearthMock.setEmbeddingDelay(ms) time between download / re-embedding events (default 60)
 *   __hearthMock.holdEmbedding()       from now on each of those events waits for stepEmbedding()
 *   __hearthMock.stepEmbedding(n)      let the next n events through (while held)
 *   __hearthMock.releaseEmbedding()    stop holding: the rest run at the normal pace
 *   __hearthMock.failNextDownload()    the next download_embedding_model fails halfway (DOWNLOAD_FAILURE)
 *   __hearthMock.setEmbeddingElsewhere(kind, provider?, model?)  another process changes the search model
 *
 * Chat: `send_message` answers with MOCK_ANSWER_PIECES (or CODE_ANSWER_PIECES, Markdown with
 * a fenced code block, when the question is about code), emitted as a few `chat_token`
 * pieces and then `chat_done` with the turn's model, tokens, cost and context zones
 * (asynchronously, after the command returned its turn id); `stop_turn` ends the stream
 * early with `stopped: true`. `regenerate` drops the last answer and streams
 * REGENERATED_ANSWER_PIECES; `edit_last_message` replaces the last user message and
 * everything after it, then answers the new text. The same works in quick.html (the quick
 * prompt sends with `conversationId: null`, so each question starts a new conversation).
 * `open_in_main` is recorded and emits `open_conversation`.
 *
 * Providers: presets, a stateful provider list (keys never leave the mock), `test_provider`
 * (fails for an unreachable URL or a key starting with `sk-bad`), model slots (chat is ready
 * when the main slot is set), local-server detection (Ollama on port 11434) and an editable
 * model table whose prices feed the cost of each answer.
 *
 * Memory (see ./memory.ts): nine memories across the four kinds (one pinned, one critical,
 * from conversations, a file, the user and an import) and one "recently removed", each with
 * its history; every memory command works on that state. In scenario `ok` the second stored
 * answer of a page session teaches the assistant something: `memory_updated` (one add, one
 * update) follows its `chat_done`. Two proposals wait
 * for the user: a change to the critical memory and the removal of the pinned one
 * (`list_memory_proposals`, accept / reject).
 *
 * Scenarios: ok (two saved chats, two providers, memories), shortcut-taken, startup-error, key-file,
 * no-provider (nothing configured; Ollama is running), chat-fails, markdown (ok plus a code
 * answer and an answer carrying an XSS payload), fallback (the main model fails and the
 * fallback answers), env-provider (HEARTH_PROVIDER_URL overrides the slots), memory-empty (ok
 * without any memory), memory-near-budget (ok plus long pinned memories that take more than
 * 80% of the memory budget), memory-off (ok with memory turned off).
 *
 * Search model (see ./embedding.ts): `?embedding=missing|local|provider|off` sets the
 * embedding choice at start (default `missing`: local, not downloaded yet, keyword-only);
 * download, re-embedding progress and a provider model that doesn't exist (`missing`).
 */
import { clearMocks, mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import type { ChatStatusDto } from '../lib/bindings/ChatStatusDto';
import type { Commands, Events } from '../lib/bindings/commands';
import type { ConversationDto } from '../lib/bindings/ConversationDto';
import type { DetectedServerDto } from '../lib/bindings/DetectedServerDto';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { MessageDto } from '../lib/bindings/MessageDto';
import type { ModelDto } from '../lib/bindings/ModelDto';
import type { ModelInfoDto } from '../lib/bindings/ModelInfoDto';
import type { PresetDto } from '../lib/bindings/PresetDto';
import type { ProviderDto } from '../lib/bindings/ProviderDto';
import type { ProviderTestDto } from '../lib/bindings/ProviderTestDto';
import type { ShortcutStatus } from '../lib/bindings/ShortcutStatus';
import type { SlotDto } from '../lib/bindings/SlotDto';
import type { SlotsDto } from '../lib/bindings/SlotsDto';
import type { StatusDto } from '../lib/bindings/StatusDto';
import type { TurnInfoDto } from '../lib/bindings/TurnInfoDto';
import type { ZonesDto } from '../lib/bindings/ZonesDto';
import type { MemoryDto } from '../lib/bindings/MemoryDto';
import type { MemoryProposalDto } from '../lib/bindings/MemoryProposalDto';
import { setUndoDelay } from '../main/memory/pending.svelte';
import { createEmbeddingMock, embeddingStateFromLocation, type EmbeddingState } from './embedding';
import { createMemoryMock, type MemoryScenario } from './memory';

export const SCENARIOS = [
  'ok',
  'shortcut-taken',
  'startup-error',
  'key-file',
  'no-provider',
  'chat-fails',
  'markdown',
  'fallback',
  'env-provider',
  'memory-empty',
  'memory-near-budget',
  'memory-off',
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
  setLocalServers(servers: LocalServer[]): void;
  failNextTurn(): void;
  setUndoDelay(ms: number): void;
  memories(): MemoryDto[];
  proposals(): MemoryProposalDto[];
  addMemoryElsewhere(text: string, kind: string): Promise<MemoryDto>;
  setEmbeddingDelay(ms: number): void;
  holdEmbedding(): void;
  stepEmbedding(count?: number): void;
  releaseEmbedding(): void;
  failNextDownload(): void;
  setEmbeddingElsewhere(kind: 'local' | 'off' | 'provider', provider?: string, model?: string): Promise<void>;
};

/** A model server "running on this computer" for detect_local_servers. */
export type LocalServer = { preset: string; label: string; base_url: string; models: string[] };

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

/** The answer to a question about code: Markdown with a heading, a list and a fenced block. */
export const CODE_ANSWER_PIECES = [
  '## Sorting by a key\n\n',
  'Use `sorted` with a `key` function:\n\n',
  '- it returns a **new** list\n',
  '- `reverse=True` sorts from high to low\n\n',
  '```python\npeople = [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]\n',
  'by_age = sorted(people, key=lambda p: p["age"])\n',
  'print(by_age[0]["name"])  # Ada\n```\n\n',
  'That is all it takes.',
];

/** What `regenerate` streams instead of the previous answer. */
export const REGENERATED_ANSWER_PIECES = [
  'Another way to look at it:\n\n',
  '- Pick one small step.\n',
  '- Do it today.\n',
  '- Look back tomorrow and adjust.',
];

/** A seeded answer with an XSS payload in its Markdown (scenario `markdown`): it must render inert. */
export const XSS_ANSWER = [
  'Here are two classic payloads, which Hearth must show as text:',
  '',
  '<img src=x onerror="window.__xss=1">',
  '',
  '<script>window.__xss=2</script>',
  '',
  'Inline too: <b onmouseover="window.__xss=4">hover</b>. A [safe link](https://example.com/docs) and a [bad link](javascript:window.__xss=3).',
].join('\n');

const CODE_QUESTION = /\b(code|python|script|function|sort|program)\b/i;

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export const PRESETS: PresetDto[] = [
  { id: 'openai', label: 'OpenAI', base_url: 'https://api.openai.com/v1', needs_key: true, protocol: 'openai', local: false },
  { id: 'anthropic', label: 'Anthropic', base_url: 'https://api.anthropic.com', needs_key: true, protocol: 'anthropic', local: false },
  { id: 'openrouter', label: 'OpenRouter', base_url: 'https://openrouter.ai/api/v1', needs_key: true, protocol: 'openai', local: false },
  { id: 'ollama', label: 'Ollama', base_url: 'http://localhost:11434/v1', needs_key: false, protocol: 'openai', local: true },
  { id: 'lmstudio', label: 'LM Studio', base_url: 'http://localhost:1234/v1', needs_key: false, protocol: 'openai', local: true },
  { id: 'llamacpp', label: 'llama.cpp server', base_url: 'http://localhost:8080/v1', needs_key: false, protocol: 'openai', local: true },
  { id: 'vllm', label: 'vLLM', base_url: 'http://localhost:8000/v1', needs_key: false, protocol: 'openai', local: false },
  { id: 'custom', label: 'Custom (OpenAI-compatible)', base_url: null, needs_key: false, protocol: 'openai', local: false },
];

/** The models each preset's server lists (window, where the window comes from). */
const PRESET_MODELS: Record<string, ModelDto[]> = {
  ollama: [
    { id: 'llama3.2', context_window: 131072, window_source: 'server' },
    { id: 'qwen2.5-coder:7b', context_window: 32768, window_source: 'server' },
    { id: 'mistral', context_window: 32768, window_source: 'server' },
  ],
  openai: [
    { id: 'gpt-4o', context_window: 128000, window_source: 'table' },
    { id: 'gpt-4o-mini', context_window: 128000, window_source: 'table' },
    { id: 'o3-mini', context_window: 200000, window_source: 'table' },
  ],
  anthropic: [
    { id: 'claude-3-5-sonnet-latest', context_window: 200000, window_source: 'table' },
    { id: 'claude-3-5-haiku-latest', context_window: 200000, window_source: 'table' },
  ],
  openrouter: [
    { id: 'meta-llama/llama-3.1-70b-instruct', context_window: 131072, window_source: 'server' },
    { id: 'mistralai/mistral-small', context_window: 32768, window_source: 'server' },
  ],
  lmstudio: [{ id: 'qwen2.5-7b-instruct', context_window: 32768, window_source: 'server' }],
  llamacpp: [{ id: 'default', context_window: 8192, window_source: 'server' }],
  vllm: [{ id: 'meta-llama/Llama-3.1-8B-Instruct', context_window: 131072, window_source: 'server' }],
  custom: [],
};

/** The built-in model table (context windows, USD per million tokens). */
export const MODEL_TABLE: ModelInfoDto[] = [
  { model: 'claude-3-5-haiku', context_window: 200000, input_usd_per_mtok: 0.8, output_usd_per_mtok: 4, cached_usd_per_mtok: 0.08, edited: false },
  { model: 'claude-3-5-sonnet', context_window: 200000, input_usd_per_mtok: 3, output_usd_per_mtok: 15, cached_usd_per_mtok: 0.3, edited: false },
  { model: 'gpt-4o', context_window: 128000, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10, cached_usd_per_mtok: 1.25, edited: false },
  { model: 'gpt-4o-mini', context_window: 128000, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6, cached_usd_per_mtok: 0.075, edited: false },
  { model: 'llama3.2', context_window: 131072, input_usd_per_mtok: null, output_usd_per_mtok: null, cached_usd_per_mtok: null, edited: false },
  { model: 'o3-mini', context_window: 200000, input_usd_per_mtok: 1.1, output_usd_per_mtok: 4.4, cached_usd_per_mtok: 0.55, edited: false },
];

export const OLLAMA_SERVER: LocalServer = {
  preset: 'ollama',
  label: 'Ollama',
  base_url: 'http://localhost:11434/v1',
  models: ['llama3.2', 'qwen2.5-coder:7b', 'mistral'],
};

/** Zones of the seeded recipe answer (a local model, first message of its chat). */
export const RECIPES_ZONES: ZonesDto = {
  system: 812,
  memory: 0,
  summary: 0,
  history: 0,
  retrieved: 0,
  current: 14,
  output_reserve: 4096,
  input_budget: 126976,
  window: 131072,
  dropped: 0,
};

/** Zones of the seeded code answer (scenario `markdown`): every zone used, 3 messages dropped. */
export const PYTHON_ZONES: ZonesDto = {
  system: 812,
  memory: 146,
  summary: 420,
  history: 434,
  retrieved: 0,
  current: 18,
  output_reserve: 4096,
  input_budget: 123904,
  window: 128000,
  dropped: 3,
};

type StoredConversation = ConversationDto & { log: MessageDto[] };

const plain = (id: number, role: 'user' | 'assistant', content: string, state = 'complete'): MessageDto => ({
  id,
  role,
  content,
  state,
  turn: null,
});

function seedConversations(now: number, withMarkdown: boolean): StoredConversation[] {
  const recipes: MessageDto[] = [
    plain(1, 'user', 'What can I cook tonight with chickpeas and spinach?'),
    {
      ...plain(
        2,
        'assistant',
        'A quick chana saag works well:\n\n1. Fry an onion, garlic and ginger.\n2. Add cumin, garam masala and the chickpeas.\n3. Stir in the spinach until it wilts, then finish with lemon.',
      ),
      turn: {
        provider: 'local',
        model: 'llama3.2',
        input_tokens: 826,
        output_tokens: 41,
        cached_input_tokens: 0,
        cost_usd: 0,
        zones: { ...RECIPES_ZONES },
        fallback_from: null,
      },
    },
  ];
  const trip: MessageDto[] = [
    plain(3, 'user', 'Plan three days in Lisbon for me.'),
    plain(4, 'assistant', 'Day 1: Alfama and the castle in the morning, then a tram ride to', 'interrupted'),
  ];
  const seeded: StoredConversation[] = [
    { id: 'c-recipes', title: 'Dinner with chickpeas', updated_at: now - 2 * 60 * MINUTE, messages: 2, log: recipes },
    { id: 'c-lisbon', title: 'Three days in Lisbon', updated_at: now - 26 * 60 * MINUTE, messages: 2, log: trip },
  ];
  if (withMarkdown) {
    const python: MessageDto[] = [
      plain(5, 'user', 'How do I sort a list of dicts by a key in Python?'),
      {
        ...plain(6, 'assistant', CODE_ANSWER_PIECES.join('')),
        turn: {
          provider: 'openai',
          model: 'gpt-4o-mini',
          input_tokens: 1830,
          output_tokens: 214,
          cached_input_tokens: 1024,
          cost_usd: 0.0031,
          zones: { ...PYTHON_ZONES },
          fallback_from: null,
        },
      },
    ];
    const html: MessageDto[] = [
      plain(7, 'user', 'What does an XSS payload look like?'),
      {
        ...plain(8, 'assistant', XSS_ANSWER),
        turn: {
          provider: 'openai',
          model: 'mystery-model',
          input_tokens: 912,
          output_tokens: 96,
          cached_input_tokens: 0,
          cost_usd: null,
          zones: null,
          fallback_from: null,
        },
      },
    ];
    seeded.push(
      { id: 'c-python', title: 'Sorting a list in Python', updated_at: now - 3 * DAY, messages: 2, log: python },
      { id: 'c-html', title: 'Untrusted HTML', updated_at: now - 4 * DAY, messages: 2, log: html },
    );
  }
  return seeded;
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
  embeddingState: EmbeddingState = embeddingStateFromLocation(),
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

  const seeded = ['ok', 'markdown', 'memory-empty', 'memory-near-budget', 'memory-off'].includes(scenario);
  const conversations: StoredConversation[] = seeded ? seedConversations(Date.now(), scenario === 'markdown') : [];
  let nextMessageId = 100;
  let nextTurnId = 1;
  let chatDelay = 120;
  let failNext = false;
  const stopRequested = new Set<number>();

  // ---- Providers, slots, model table ----
  type StoredProvider = ProviderDto & { key: string | null };
  const providers: StoredProvider[] =
    scenario === 'no-provider'
      ? []
      : [
          { name: 'local', preset: 'ollama', protocol: 'openai', base_url: 'http://localhost:11434/v1', key_location: 'none', key: null },
          { name: 'openai', preset: 'openai', protocol: 'openai', base_url: 'https://api.openai.com/v1', key_location: 'keyring', key: 'sk-test' },
        ];
  let slots: SlotsDto =
    scenario === 'no-provider'
      ? { main: null, fast: null, fallback: null, fallback_enabled: false, from_env: false }
      : scenario === 'fallback'
        ? {
            main: { provider: 'openai', model: 'gpt-4o' },
            fast: null,
            fallback: { provider: 'local', model: 'llama3.2' },
            fallback_enabled: true,
            from_env: false,
          }
        : {
            main: { provider: 'local', model: 'llama3.2' },
            fast: null,
            fallback: null,
            fallback_enabled: false,
            from_env: scenario === 'env-provider',
          };
  let modelTable: ModelInfoDto[] = structuredClone(MODEL_TABLE);

  // ---- Memory ----
  const memoryScenario: MemoryScenario =
    scenario === 'memory-near-budget'
      ? 'near-budget'
      : scenario === 'memory-off'
        ? 'off'
        : seeded && scenario !== 'memory-empty'
          ? 'seeded'
          : 'empty';
  const memory = createMemoryMock({
    scenario: memoryScenario,
    learns: scenario === 'ok',
    emit: (event, payload) => emit(event, payload),
    learnDelay: () => Math.min(chatDelay, 150),
  });
  let localServers: LocalServer[] = [structuredClone(OLLAMA_SERVER)];
  // Active memories, as the core's vector_counts counts them.
  const embedding = createEmbeddingMock({
    state: embeddingState,
    memories: () => memory.snapshot().filter((m) => m.status === 'active').length,
    providerExists: (name) => providers.some((p) => p.name === name),
    emit: (event, payload) => emit(event, payload),
  });

  const fail = (code: string, message: string): never => {
    const error: ErrorDto = { code, message };
    throw error;
  };

  const publicProvider = ({ key: _key, ...dto }: StoredProvider): ProviderDto => ({ ...dto });
  const providerNamed = (name: string): StoredProvider | undefined => providers.find((p) => p.name === name);

  function chatStatus(): ChatStatusDto {
    if (slots.from_env) return { ready: true, provider: 'env', model: 'llama3.2', hint: null };
    if (slots.main === null) return { ...NO_PROVIDER_CHAT };
    return { ready: true, provider: slots.main.provider, model: slots.main.model, hint: null };
  }

  function testProvider(provider: StoredProvider): ProviderTestDto {
    const url = provider.base_url;
    if (/offline|unreachable|:9999\b/.test(url)) {
      return {
        ok: false,
        models: [],
        error: { code: 'provider_unreachable', message: `Couldn't connect to ${url}: connection refused. Is the server running?` },
      };
    }
    if (provider.key?.startsWith('sk-bad')) {
      return {
        ok: false,
        models: [],
        error: { code: 'provider_auth', message: `${provider.name} rejected the API key (401): check the key for ${provider.name}` },
      };
    }
    const models = provider.preset === 'custom' ? [{ id: 'my-model', context_window: null, window_source: 'unknown' }] : (PRESET_MODELS[provider.preset] ?? []);
    return { ok: true, models: structuredClone(models), error: null };
  }

  function modelInfo(model: string): ModelInfoDto | undefined {
    // Longest prefix wins (gpt-4o-mini before gpt-4o).
    return [...modelTable].sort((a, b) => b.model.length - a.model.length).find((row) => model.startsWith(row.model));
  }

  function windowFor(model: string): number {
    for (const list of Object.values(PRESET_MODELS)) {
      const found = list.find((m) => m.id === model);
      if (found?.context_window) return found.context_window;
    }
    return modelInfo(model)?.context_window ?? 8192;
  }

  const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

  /** Model, tokens, cost and zones of one mock turn. */
  function turnInfo(slot: SlotDto, history: MessageDto[], question: string, answer: string): TurnInfoDto {
    const provider = providerNamed(slot.provider);
    const window = windowFor(slot.model);
    const reserve = 4096;
    const zones: ZonesDto = {
      system: 812,
      memory: 0,
      summary: 0,
      history: history.reduce((sum, m) => sum + estimate(m.content), 0),
      retrieved: 0,
      current: estimate(question),
      output_reserve: reserve,
      input_budget: window - reserve,
      window,
      dropped: 0,
    };
    const input = zones.system + zones.memory + zones.summary + zones.history + zones.retrieved + zones.current;
    const output = estimate(answer);
    const local = provider ? (PRESETS.find((p) => p.id === provider.preset)?.local ?? false) : true;
    const cached = local ? 0 : Math.min(768, input);
    const price = modelInfo(slot.model);
    let cost: number | null = null;
    if (local) cost = 0;
    else if (typeof price?.input_usd_per_mtok === 'number' && typeof price.output_usd_per_mtok === 'number') {
      const cachedPrice = price.cached_usd_per_mtok ?? price.input_usd_per_mtok;
      cost = ((input - cached) * price.input_usd_per_mtok + cached * cachedPrice + output * price.output_usd_per_mtok) / 1_000_000;
    }
    return {
      provider: slot.provider,
      model: slot.model,
      input_tokens: input,
      output_tokens: output,
      cached_input_tokens: cached,
      cost_usd: cost,
      zones,
      fallback_from: null,
    };
  }

  const listing = (): ConversationDto[] =>
    [...conversations]
      .sort((a, b) => b.updated_at - a.updated_at)
      .map(({ id, title, updated_at, messages }) => ({ id, title, updated_at, messages }));

  function find(conversationId: string): StoredConversation {
    const conversation = conversations.find((c) => c.id === conversationId);
    if (!conversation) fail('not_found', `No conversation "${conversationId}".`);
    return conversation as StoredConversation;
  }

  function requireReady(): void {
    const current = chatStatus();
    if (!current.ready) fail('no_provider', current.hint ?? 'No model provider.');
  }

  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  /** Stream the answer for one turn (runs after the command has returned). */
  async function streamTurn(
    turnId: number,
    conversation: StoredConversation | null,
    question: string,
    pieces: string[],
  ): Promise<void> {
    await sleep(chatDelay);
    if (scenario === 'chat-fails' || failNext) {
      failNext = false;
      await emit('chat_failed', { turn_id: turnId, ...CHAT_FAILURE });
      return;
    }
    const history = conversation ? conversation.log.slice(0, -1) : [];
    let answer = '';
    let stopped = false;
    for (const piece of pieces) {
      if (stopRequested.has(turnId)) {
        stopped = true;
        break;
      }
      answer += piece;
      await emit('chat_token', { turn_id: turnId, text: piece });
      await sleep(chatDelay);
    }
    if (stopRequested.has(turnId)) stopped = true;
    const main = slots.from_env ? { provider: 'env', model: 'llama3.2' } : (slots.main ?? { provider: 'local', model: 'llama3.2' });
    const answeredBy = scenario === 'fallback' && slots.fallback_enabled && slots.fallback ? slots.fallback : main;
    const turn = turnInfo(answeredBy, history, question, answer);
    if (answeredBy !== main) turn.fallback_from = main.model;
    let messageId: number | null = null;
    if (conversation) {
      messageId = nextMessageId++;
      conversation.log.push({ id: messageId, role: 'assistant', content: answer, state: stopped ? 'stopped' : 'complete', turn: structuredClone(turn) });
      conversation.messages = conversation.log.length;
      conversation.updated_at = Date.now();
    }
    await emit('chat_done', {
      turn_id: turnId,
      conversation_id: conversation?.id ?? null,
      answer,
      stopped,
      input_tokens: turn.input_tokens,
      output_tokens: turn.output_tokens,
      message_id: messageId,
      turn,
    });
    // After the answer, the core reconciles memory in the background (never for a temporary chat).
    if (conversation && messageId !== null && !stopped) memory.afterAnswer(conversation.id, messageId);
  }

  const answerFor = (question: string): string[] => (CODE_QUESTION.test(question) ? CODE_ANSWER_PIECES : MOCK_ANSWER_PIECES);

  function startTurn(conversation: StoredConversation | null, question: string, pieces: string[]): { turn_id: number } {
    const turnId = nextTurnId++;
    void streamTurn(turnId, conversation, question, pieces);
    return { turn_id: turnId };
  }

  function lastUserIndex(conversation: StoredConversation): number {
    for (let i = conversation.log.length - 1; i >= 0; i--) if (conversation.log[i]?.role === 'user') return i;
    return -1;
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
    chat_status: () => chatStatus(),
    list_conversations: () => listing(),
    get_messages: ({ conversationId }) => structuredClone(find(conversationId).log),
    send_message: ({ conversationId, text, temporary }) => {
      requireReady();
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
        conversation.log.push(plain(nextMessageId++, 'user', text));
        conversation.messages = conversation.log.length;
        conversation.updated_at = Date.now();
      }
      return startTurn(conversation, text, answerFor(text));
    },
    regenerate: ({ conversationId }) => {
      requireReady();
      const conversation = find(conversationId);
      const userIndex = lastUserIndex(conversation);
      if (userIndex < 0) fail('nothing_to_regenerate', 'This conversation has no question to answer again.');
      // The old last answer goes; the new one is stored when it is done.
      conversation.log.splice(userIndex + 1);
      conversation.messages = conversation.log.length;
      const question = conversation.log[userIndex]?.content ?? '';
      return startTurn(conversation, question, REGENERATED_ANSWER_PIECES);
    },
    edit_last_message: ({ conversationId, text }) => {
      requireReady();
      if (text.trim() === '') fail('empty_message', 'The message is empty.');
      const conversation = find(conversationId);
      const userIndex = lastUserIndex(conversation);
      if (userIndex < 0) fail('nothing_to_edit', 'This conversation has no message to edit.');
      const user = conversation.log[userIndex] as MessageDto;
      user.content = text;
      conversation.log.splice(userIndex + 1);
      conversation.messages = conversation.log.length;
      conversation.updated_at = Date.now();
      return startTurn(conversation, text, answerFor(text));
    },
    stop_turn: ({ turnId }) => {
      stopRequested.add(turnId);
      return null;
    },
    delete_conversation: ({ conversationId, deleteMemories }) => {
      const index = conversations.findIndex((c) => c.id === conversationId);
      if (index >= 0) conversations.splice(index, 1);
      if (deleteMemories) memory.forgetConversation(conversationId);
      return null;
    },
    // The real shell shows the main window and emits `open_conversation` to it. Here both
    // windows are separate pages, so the event is emitted to this page (tests emit it in main).
    open_in_main: async ({ conversationId }) => {
      await emit('open_conversation', { conversation_id: conversationId });
      return null;
    },

    list_presets: () => structuredClone(PRESETS),
    list_providers: () => providers.map(publicProvider),
    add_provider: ({ name, preset, baseUrl, apiKey }) => {
      const trimmed = name.trim();
      const found = PRESETS.find((p) => p.id === preset);
      if (!found) fail('unknown_preset', `There is no preset "${preset}".`);
      const presetDto = found as PresetDto;
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/.test(trimmed)) {
        fail('invalid_name', 'A provider name is 1–40 letters, digits, dots, dashes or underscores, starting with a letter or digit.');
      }
      if (providerNamed(trimmed)) fail('provider_exists', `A provider named "${trimmed}" already exists.`);
      const url = (baseUrl ?? '').trim() || presetDto.base_url;
      if (!url) fail('missing_base_url', `The ${presetDto.label} preset needs a base URL.`);
      if (!/^https?:\/\/[^\s/]+/.test(url as string)) fail('invalid_base_url', `"${url}" isn't an http:// or https:// URL.`);
      const key = apiKey?.trim() || null;
      if (presetDto.needs_key && key === null) fail('missing_key', `${presetDto.label} needs an API key.`);
      const provider: StoredProvider = {
        name: trimmed,
        preset,
        protocol: presetDto.protocol,
        base_url: (url as string).replace(/\/+$/, ''),
        key_location: key === null ? 'none' : 'keyring',
        key,
      };
      providers.push(provider);
      return publicProvider(provider);
    },
    remove_provider: ({ name }) => {
      const index = providers.findIndex((p) => p.name === name);
      if (index < 0) fail('not_found', `No provider named "${name}".`);
      providers.splice(index, 1);
      // Slots that used it are cleared, as the core does.
      if (slots.main?.provider === name) slots = { ...slots, main: null };
      if (slots.fast?.provider === name) slots = { ...slots, fast: null };
      if (slots.fallback?.provider === name) slots = { ...slots, fallback: null, fallback_enabled: false };
      return null;
    },
    test_provider: async ({ name }) => {
      const provider = providerNamed(name);
      if (!provider) fail('not_found', `No provider named "${name}".`);
      await sleep(Math.min(chatDelay, 150));
      return testProvider(provider as StoredProvider);
    },
    detect_local_servers: async () => {
      await sleep(Math.min(chatDelay, 150));
      return localServers.map(
        (server): DetectedServerDto => ({
          ...structuredClone(server),
          configured_as: providers.find((p) => p.base_url === server.base_url)?.name ?? null,
        }),
      );
    },
    get_slots: () => structuredClone(slots),
    set_slots: ({ main, fast, fallback, fallbackEnabled }) => {
      for (const slot of [main, fast, fallback]) {
        if (slot === null) continue;
        if (!providerNamed(slot.provider)) fail('unknown_provider', `No provider named "${slot.provider}".`);
        if (slot.model.trim() === '') fail('missing_model', `Choose a model for ${slot.provider}.`);
      }
      if (fallbackEnabled && fallback === null) fail('missing_fallback', 'Choose a fallback model, or turn the fallback off.');
      slots = { main, fast, fallback, fallback_enabled: fallbackEnabled, from_env: slots.from_env };
      return structuredClone(slots);
    },
    list_model_info: () => structuredClone(modelTable),
    set_model_info: ({ model, contextWindow, inputUsdPerMtok, outputUsdPerMtok, cachedUsdPerMtok }) => {
      const name = model.trim();
      if (name === '') fail('invalid_model', 'A model name is required.');
      for (const value of [contextWindow, inputUsdPerMtok, outputUsdPerMtok, cachedUsdPerMtok]) {
        if (value !== null && (!Number.isFinite(value) || value < 0)) fail('invalid_number', 'Windows and prices must be zero or more.');
      }
      const row: ModelInfoDto = {
        model: name,
        context_window: contextWindow,
        input_usd_per_mtok: inputUsdPerMtok,
        output_usd_per_mtok: outputUsdPerMtok,
        cached_usd_per_mtok: cachedUsdPerMtok,
        edited: true,
      };
      const index = modelTable.findIndex((r) => r.model === name);
      if (index >= 0) modelTable[index] = row;
      else modelTable = [...modelTable, row].sort((a, b) => a.model.localeCompare(b.model));
      return structuredClone(modelTable);
    },
    reset_model_info: ({ model }) => {
      const builtIn = MODEL_TABLE.find((r) => r.model === model);
      const index = modelTable.findIndex((r) => r.model === model);
      if (index < 0) fail('not_found', `No model "${model}" in the table.`);
      if (builtIn) modelTable[index] = structuredClone(builtIn);
      else modelTable.splice(index, 1);
      return structuredClone(modelTable);
    },

    ...memory.handlers,
    ...embedding.handlers,
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
    setLocalServers: (servers) => {
      localServers = structuredClone(servers);
    },
    failNextTurn: () => {
      failNext = true;
    },
    setUndoDelay: (ms) => setUndoDelay(ms),
    memories: () => memory.snapshot(),
    proposals: () => memory.proposals(),
    addMemoryElsewhere: (text, kind) => memory.addElsewhere(text, kind),
    setEmbeddingDelay: (ms) => embedding.setDelay(ms),
    holdEmbedding: () => embedding.hold(),
    stepEmbedding: (count) => embedding.step(count),
    releaseEmbedding: () => embedding.release(),
    failNextDownload: () => embedding.failNextDownload(),
    setEmbeddingElsewhere: (kind, provider, model) => embedding.changeElsewhere(kind, provider, model),
  };
  window.__hearthMock = control;
  return control;
}
