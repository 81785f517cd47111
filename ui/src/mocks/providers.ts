/**
 * The mock core's model providers: presets, a stateful provider list (keys never leave the
 * mock), `test_provider` (fails for an unreachable URL or a key starting with `sk-bad`), model
 * slots (chat is ready when the main slot is set; scenario `env-provider` overrides them,
 * `fallback` adds a fallback, `no-provider` has none), local-server detection (Ollama on port
 * 11434) and an editable model table whose prices feed the cost of each answer (./chat.ts).
 */
import type { ChatStatusDto } from '../lib/bindings/ChatStatusDto';
import type { DetectedServerDto } from '../lib/bindings/DetectedServerDto';
import type { ModelDto } from '../lib/bindings/ModelDto';
import type { ModelInfoDto } from '../lib/bindings/ModelInfoDto';
import type { PresetDto } from '../lib/bindings/PresetDto';
import type { ProviderDto } from '../lib/bindings/ProviderDto';
import type { ProviderTestDto } from '../lib/bindings/ProviderTestDto';
import type { SlotsDto } from '../lib/bindings/SlotsDto';
import type { SpendingDto } from '../lib/bindings/SpendingDto';
import type { StandingDto } from '../lib/bindings/StandingDto';
import type { UsageDto } from '../lib/bindings/UsageDto';
import type { UsageRowDto } from '../lib/bindings/UsageRowDto';
import type { Scenario } from './scenarios';
import { fail, sleep, type HandlersFor } from './types';

/** A model server "running on this computer" for detect_local_servers. */
export type LocalServer = { preset: string; label: string; base_url: string; models: string[] };

export const READY_CHAT: ChatStatusDto = {
  ready: true,
  provider: 'local',
  model: 'llama3.2',
  fast_model: null,
  hint: null,
};

export const NO_PROVIDER_CHAT: ChatStatusDto = {
  ready: false,
  provider: null,
  model: null,
  fast_model: null,
  hint: 'No model provider is set up yet. Add one from a terminal, then come back here.',
};

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


type ProviderCommand =
  | 'list_presets'
  | 'list_providers'
  | 'add_provider'
  | 'remove_provider'
  | 'test_provider'
  | 'detect_local_servers'
  | 'get_slots'
  | 'set_slots'
  | 'list_model_info'
  | 'set_model_info'
  | 'reset_model_info'
  | 'get_usage'
  | 'get_spending'
  | 'set_budget'
  | 'set_routing';

type StoredProvider = ProviderDto & { key: string | null };

export type ProvidersMock = {
  handlers: HandlersFor<ProviderCommand>;
  /** The slots now (not a copy). */
  slots(): SlotsDto;
  chatStatus(): ChatStatusDto;
  /** Whether a configured provider runs on this computer (an unknown one counts as local). */
  isLocal(name: string): boolean;
  exists(name: string): boolean;
  modelInfo(model: string): ModelInfoDto | undefined;
  windowFor(model: string): number;
  setLocalServers(servers: LocalServer[]): void;
};

export function createProvidersMock(options: {
  scenario: Scenario;
  /** The mock's pace (ms): tests and detection wait at most 150 ms of it. */
  delay: () => number;
  /** The built-in model the chat would use (with no provider configured), if installed. */
  builtin: () => string | null;
}): ProvidersMock {
  const { scenario } = options;
  const providers: StoredProvider[] =
    scenario === 'no-provider'
      ? []
      : [
          { name: 'local', preset: 'ollama', protocol: 'openai', base_url: 'http://localhost:11434/v1', key_location: 'none', key: null },
          { name: 'openai', preset: 'openai', protocol: 'openai', base_url: 'https://api.openai.com/v1', key_location: 'keyring', key: 'sk-test' },
        ];
  // Spending: scenario `over-budget` has a $5 daily cap with $4.98 spent.
  let spending: SpendingDto = {
    daily_usd: scenario === 'over-budget' ? 5 : null,
    monthly_usd: null,
    providers: [],
    status: [],
    routing: true,
    cascade: false,
  };
  const spent = scenario === 'over-budget' ? 4.98 : 0;
  const spendingNow = (): SpendingDto => {
    const caps: [string, number | null, string, string | null][] = [
      ['day', spending.daily_usd, 'daily', null],
      ['month', spending.monthly_usd, 'monthly', null],
      ...spending.providers.flatMap((p): [string, number | null, string, string | null][] => [
        ['day', p.daily_usd, 'daily', p.provider],
        ['month', p.monthly_usd, 'monthly', p.provider],
      ]),
    ];
    const status = caps.flatMap(([period, cap, word, provider]) =>
      typeof cap === 'number'
        ? [
            {
              period,
              provider,
              spent_usd: spent,
              cap_usd: cap,
              text: `You have spent $${spent.toFixed(2)} of your ${word} budget${provider === null ? '' : ` for ${provider}`} of $${cap.toFixed(2)} (${cap > 0 ? Math.round((spent / cap) * 100) : 100} %).`,
            },
          ]
        : [],
    );
    return structuredClone({ ...spending, status });
  };
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
            // The cascade's fast model (the composer then offers a choice of model).
            fast: scenario === 'cascade' ? { provider: 'local', model: 'llama3.2:1b' } : null,
            fallback: null,
            fallback_enabled: false,
            from_env: scenario === 'env-provider',
          };
  let modelTable: ModelInfoDto[] = structuredClone(MODEL_TABLE);
  let localServers: LocalServer[] = [structuredClone(OLLAMA_SERVER)];

  const publicProvider = ({ key: _key, ...dto }: StoredProvider): ProviderDto => ({ ...dto });
  const providerNamed = (name: string): StoredProvider | undefined => providers.find((p) => p.name === name);

  function chatStatus(): ChatStatusDto {
    if (slots.from_env) return { ready: true, provider: 'env', model: 'llama3.2', fast_model: null, hint: null };
    if (slots.main === null) {
      const builtin = options.builtin();
      if (builtin !== null) return { ready: true, provider: 'builtin', model: builtin, fast_model: null, hint: null };
      return { ...NO_PROVIDER_CHAT };
    }
    const fast = slots.fast;
    const other = fast !== null && (fast.provider !== slots.main.provider || fast.model !== slots.main.model);
    return {
      ready: true,
      provider: slots.main.provider,
      model: slots.main.model,
      fast_model: other ? fast.model : null,
      hint: null,
    };
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

  const handlers: HandlersFor<ProviderCommand> = {
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
      await sleep(Math.min(options.delay(), 150));
      return testProvider(provider as StoredProvider);
    },
    detect_local_servers: async () => {
      await sleep(Math.min(options.delay(), 150));
      return localServers.map(
        (server): DetectedServerDto => ({
          ...structuredClone(server),
          configured_as: providers.find((p) => p.base_url === server.base_url)?.name ?? null,
        }),
      );
    },
    get_slots: () => structuredClone(slots),
    get_spending: () => spendingNow(),
    get_usage: ({ since }) => usageSince(since, spendingNow().status),
    set_budget: ({ provider, dailyUsd, monthlyUsd }) => {
      if (provider !== null && !providerNamed(provider)) fail('not_found', `there is no provider ${provider}`);
      for (const v of [dailyUsd, monthlyUsd]) {
        if (v !== null && (!Number.isFinite(v) || v < 0 || v > 1_000_000)) fail('invalid_input', 'a cap must be between 0 and 1000000 USD');
      }
      if (provider === null) {
        spending = { ...spending, daily_usd: dailyUsd, monthly_usd: monthlyUsd };
      } else {
        const others = spending.providers.filter((p) => p.provider !== provider);
        const caps = dailyUsd === null && monthlyUsd === null ? [] : [{ provider, daily_usd: dailyUsd, monthly_usd: monthlyUsd }];
        spending = { ...spending, providers: [...others, ...caps].sort((a, b) => a.provider.localeCompare(b.provider)) };
      }
      return spendingNow();
    },
    set_routing: ({ enabled, cascade }) => {
      spending = { ...spending, routing: enabled, cascade };
      return spendingNow();
    },
    set_slots: ({ main, fast, fallback, fallbackEnabled }) => {
      for (const slot of [main, fast, fallback]) {
        if (slot === null) continue;
        const builtinOk = slot.provider === 'builtin' && options.builtin() !== null;
        if (!builtinOk && !providerNamed(slot.provider)) fail('unknown_provider', `No provider named "${slot.provider}".`);
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

  };

  return {
    handlers,
    slots: () => slots,
    chatStatus,
    isLocal: (name) => {
      const provider = providerNamed(name);
      return provider ? (PRESETS.find((p) => p.id === provider.preset)?.local ?? false) : true;
    },
    exists: (name) => providers.some((p) => p.name === name),
    modelInfo,
    windowFor,
    setLocalServers: (servers) => {
      localServers = structuredClone(servers);
    },
  };
}

/** A row of the mock ledger. */
function row(key: string, calls: number, input: number, output: number, cached: number, cost: number, p50: number | null): UsageRowDto {
  return {
    key,
    calls,
    failed_calls: 0,
    input_tokens: input,
    output_tokens: output,
    cached_input_tokens: cached,
    cost_usd: cost,
    calls_without_price: 0,
    latency_ms_p50: p50,
    latency_ms_p95: p50 === null ? null : Math.round(p50 * 2.4),
  };
}

/**
 * The Usage screen's figures since `since`: a month of calls (every third day quiet), by day,
 * model and purpose, with the budgets of the spending settings.
 */
function usageSince(since: string, budgets: StandingDto[]): UsageDto {
  const now = new Date();
  const pad = (n: number): string => String(n).padStart(2, '0');
  const days: UsageRowDto[] = [];
  for (let ago = 89; ago >= 0; ago--) {
    const d = new Date(now.getFullYear(), now.getMonth(), now.getDate() - ago);
    const key = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    if (key < since || ago % 3 === 2) continue;
    const calls = 4 + ((ago * 7) % 11);
    days.push(row(key, calls, calls * 1830, calls * 214, calls * 1024, Math.round(calls * (12 + (ago % 5) * 4)) / 100, 900));
  }
  const sum = (f: (r: UsageRowDto) => number): number => days.reduce((a, r) => a + f(r), 0);
  const calls = sum((r) => r.calls);
  const input = sum((r) => r.input_tokens);
  const output = sum((r) => r.output_tokens);
  const cached = sum((r) => r.cached_input_tokens);
  const cost = Math.round(sum((r) => r.cost_usd) * 100) / 100;
  const share = (part: number): number => Math.round(calls * part);
  const models = [
    row('openai/gpt-4o', share(0.4), Math.round(input * 0.6), Math.round(output * 0.6), Math.round(cached * 0.7), Math.round(cost * 0.86 * 100) / 100, 1420),
    row('openai/gpt-4o-mini', share(0.35), Math.round(input * 0.25), Math.round(output * 0.25), Math.round(cached * 0.3), Math.round(cost * 0.14 * 100) / 100, 610),
    row('local/llama3.2', share(0.25), Math.round(input * 0.15), Math.round(output * 0.15), 0, 0, 830),
  ];
  const slots = [
    row('main', share(0.7), Math.round(input * 0.8), Math.round(output * 0.85), Math.round(cached * 0.9), Math.round(cost * 0.9 * 100) / 100, 1100),
    row('learning', share(0.22), Math.round(input * 0.12), Math.round(output * 0.1), 0, Math.round(cost * 0.07 * 100) / 100, 640),
    row('compaction', share(0.08), Math.round(input * 0.08), Math.round(output * 0.05), Math.round(cached * 0.1), Math.round(cost * 0.03 * 100) / 100, 700),
  ];
  return {
    since,
    days,
    models,
    slots,
    total: row('total', calls, input, output, cached, cost, 980),
    cache_hit_ratio: input > 0 ? cached / input : null,
    routing: {
      fast: share(0.35),
      strong: share(0.3),
      escalated: share(0.02),
      cached: share(0.03),
      fast_cost_usd: Math.round(cost * 0.14 * 100) / 100,
      always_strong_usd: Math.round(cost * 0.14 * 16.6 * 100) / 100,
      saved_usd: Math.round(cost * 0.14 * 15.6 * 100) / 100,
    },
    budgets,
  };
}
