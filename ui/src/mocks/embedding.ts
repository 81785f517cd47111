/**
 * The mock core's embedding model (Memory → Search model), with the rules of the shell's
 * `memory_cmd.rs` and hearth-core's `Hearth::set_embedding` / `download_local_model`:
 *
 * - the choice is a local model (`local_models`: MiniLM, the default, or bge-small), `off`
 *   or a provider's model; a local model must be downloaded first (until then search is
 *   keyword-only: `model` is null), each on its own;
 * - `set_embedding` with a provider tries the model once (a short wait) and refuses a model
 *   the provider lacks (`missing`: `provider_bad_request`) without changing the choice;
 *   other provider models answer with 768 dimensions;
 * - `download_embedding_model` emits `model_download_progress` for config.json,
 *   tokenizer.json and model.safetensors (several events for the last), refuses a second
 *   download with `busy`, and resolves once the files are there;
 * - whenever the model in use changes, memories are re-embedded "in the background": after
 *   the command resolved, `embedding_progress` events count them up, a batch of 3 at a time,
 *   the last one repeated (as the core does).
 *
 * Initial state: `?embedding=missing` (default: local, not downloaded yet), `local`
 * (downloaded and indexed), `provider` (local:nomic-embed-text, indexed) or `off`.
 *
 * Pacing: every event waits `delay` ms (setEmbeddingDelay). `hold()` switches to steps: each
 * event then waits for a `step()`, so a test can look at every state; `release()` lets the
 * rest run.
 */
import type { Commands, Events } from '../lib/bindings/commands';
import type { EmbeddingStatusDto } from '../lib/bindings/EmbeddingStatusDto';
import type { ErrorDto } from '../lib/bindings/ErrorDto';

export const EMBEDDING_STATES = ['missing', 'local', 'provider', 'off'] as const;
export type EmbeddingState = (typeof EMBEDDING_STATES)[number];

/** The default local model: its name and vector size, as hearth-core's `embed::local`. */
export const LOCAL_MODEL = 'all-MiniLM-L6-v2';
/** The local models, as hearth-core's `embed::LocalModel` describes them. */
export const LOCAL_MODELS: { id: string; description: string; download_mb: number }[] = [
  { id: LOCAL_MODEL, description: 'all-MiniLM-L6-v2 — fast, the default (about 90 MB)', download_mb: 90 },
  {
    id: 'bge-small-en-v1.5',
    description: 'bge-small-en-v1.5 — better at finding memories by meaning, slower (about 133 MB)',
    download_mb: 133,
  },
];
export const LOCAL_DIMENSIONS = 384;
/** What a provider's embedding model measures in the mock. */
export const PROVIDER_DIMENSIONS = 768;
/** The provider model that `set_embedding` refuses (the provider doesn't have it). */
export const MISSING_MODEL = 'missing';

/** The local model's files and sizes (bytes), in download order. */
export const MODEL_FILES: { file: string; size: number }[] = [
  { file: 'config.json', size: 612 },
  { file: 'tokenizer.json', size: 466_247 },
  { file: 'model.safetensors', size: 90_868_376 },
];
/** Fractions of model.safetensors at which a progress event is emitted. */
const BIG_FILE_STEPS = [0.12, 0.3, 0.48, 0.66, 0.84, 1];
const REEMBED_BATCH = 3;

export const DOWNLOAD_FAILURE: ErrorDto = {
  code: 'download_failed',
  message: "Couldn't download model.safetensors from huggingface.co: the connection was reset. Check your connection and try again.",
};

type EmbeddingCommand = 'get_embedding_status' | 'set_embedding' | 'download_embedding_model';

export type EmbeddingHandlers = {
  [K in EmbeddingCommand]: (args: Commands[K]['args']) => Commands[K]['result'] | Promise<Commands[K]['result']>;
};

type Choice =
  | { kind: 'local'; model: string }
  | { kind: 'off' }
  | { kind: 'provider'; provider: string; model: string; dimensions: number };

export type EmbeddingMock = {
  handlers: EmbeddingHandlers;
  /** What get_embedding_status returns now. */
  status(): EmbeddingStatusDto;
  setDelay(ms: number): void;
  hold(): void;
  step(count?: number): void;
  release(): void;
  failNextDownload(): void;
  /** Another process changes the choice (then `store_changed`). */
  changeElsewhere(kind: 'local' | 'off' | 'provider', provider?: string, model?: string): Promise<void>;
};

export function embeddingStateFromLocation(location: Location = window.location): EmbeddingState {
  const requested = new URLSearchParams(location.search).get('embedding') ?? 'missing';
  if ((EMBEDDING_STATES as readonly string[]).includes(requested)) return requested as EmbeddingState;
  console.warn(`Hearth mocks: unknown embedding state "${requested}", using "missing".`);
  return 'missing';
}

export function createEmbeddingMock(options: {
  state: EmbeddingState;
  /** Memories that want a vector (every memory not superseded). */
  memories: () => number;
  /** Configured providers, by name. */
  providerExists: (name: string) => boolean;
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
}): EmbeddingMock {
  const fail = (code: string, message: string): never => {
    const error: ErrorDto = { code, message };
    throw error;
  };

  let choice: Choice =
    options.state === 'off'
      ? { kind: 'off' }
      : options.state === 'provider'
        ? { kind: 'provider', provider: 'local', model: 'nomic-embed-text', dimensions: PROVIDER_DIMENSIONS }
        : { kind: 'local', model: LOCAL_MODEL };
  /** The local models whose files are here. */
  const onDisk = new Set<string>(options.state !== 'missing' ? [LOCAL_MODEL] : []);
  const localOf = (c: Choice): string => (c.kind === 'local' ? c.model : LOCAL_MODEL);
  /** The embedder in use: its model and dimensions (null: keyword-only). */
  let embedder: { model: string; dimensions: number } | null = embedderFor(choice);
  /** The model every memory has a vector from (when no job is running). */
  let indexedModel: string | null = embedder?.model ?? null;
  /** The running re-embedding job. */
  let job: { id: number; model: string; done: number } | null = null;
  let nextJob = 1;
  let downloading = false;
  let failDownload = false;

  // ---- Pacing ----
  let delay = 60;
  let holding = false;
  let credits = 0;
  let waiters: (() => void)[] = [];

  function pace(): Promise<void> {
    if (!holding) return new Promise((resolve) => setTimeout(resolve, delay));
    if (credits > 0) {
      credits -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => waiters.push(resolve));
  }

  function grant(): void {
    while (credits > 0 && waiters.length > 0) {
      credits -= 1;
      waiters.shift()?.();
    }
  }

  function embedderFor(c: Choice): { model: string; dimensions: number } | null {
    if (c.kind === 'local') return onDisk.has(c.model) ? { model: c.model, dimensions: LOCAL_DIMENSIONS } : null;
    if (c.kind === 'provider') return { model: c.model, dimensions: c.dimensions };
    return null;
  }

  function embedded(): number {
    if (embedder === null) return 0;
    if (job !== null && job.model === embedder.model) return job.done;
    return indexedModel === embedder.model ? options.memories() : 0;
  }

  function status(): EmbeddingStatusDto {
    return {
      kind: choice.kind,
      provider: choice.kind === 'provider' ? choice.provider : null,
      provider_model: choice.kind === 'provider' ? choice.model : null,
      local_model: choice.kind === 'local' ? choice.model : null,
      local_models: LOCAL_MODELS.map((m) => ({ ...m, on_disk: onDisk.has(m.id) })),
      label:
        choice.kind === 'provider'
          ? `${choice.provider}:${choice.model}`
          : choice.kind === 'local' && choice.model !== LOCAL_MODEL
            ? `local:${choice.model}`
            : choice.kind,
      model: embedder?.model ?? null,
      dimensions: embedder?.dimensions ?? null,
      local_model_on_disk: onDisk.has(localOf(choice)),
      memories: options.memories(),
      embedded: embedded(),
      downloading,
      loaded: false,
    };
  }

  /** Use `next` (the core's install_embedder): queue a re-embedding when the model changed. */
  function install(next: { model: string; dimensions: number } | null): void {
    embedder = next;
    if (next === null || (indexedModel === next.model && job === null)) return;
    const mine = { id: nextJob++, model: next.model, done: 0 };
    job = mine;
    // The command resolves first; the job runs afterwards.
    setTimeout(() => void reembed(mine), 0);
  }

  async function reembed(mine: { id: number; model: string; done: number }): Promise<void> {
    const total = options.memories();
    // Like the core: one event as the job starts, then one per batch.
    await options.emit('embedding_progress', { model: mine.model, done: mine.done, total });
    for (;;) {
      await pace();
      if (job?.id !== mine.id) return; // another model took over
      const n = Math.min(REEMBED_BATCH, total - mine.done);
      mine.done += n;
      await options.emit('embedding_progress', { model: mine.model, done: mine.done, total });
      if (n === 0) break;
    }
    job = null;
    indexedModel = mine.model;
  }

  const handlers: EmbeddingHandlers = {
    get_embedding_status: () => status(),
    set_embedding: async ({ kind, provider, model }) => {
      let next: Choice;
      if (kind === 'local') {
        const m = model?.trim() || LOCAL_MODEL;
        if (!LOCAL_MODELS.some((l) => l.id === m)) return fail('invalid_input', `unknown local model "${m}"`);
        next = { kind, model: m };
      } else if (kind === 'off') {
        next = { kind };
      } else if (kind === 'provider') {
        const p = provider?.trim() ?? '';
        const m = model?.trim() ?? '';
        if (p === '' || m === '') return fail('invalid_input', 'choose a provider and type its embedding model');
        if (!options.providerExists(p)) return fail('not_found', `provider "${p}"; add it with \`hearth providers add\``);
        // The model is tried once before it is used.
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (m === MISSING_MODEL) return fail('provider_bad_request', `${p}: model "${m}" not found`);
        next = { kind: 'provider', provider: p, model: m, dimensions: PROVIDER_DIMENSIONS };
      } else {
        return fail('invalid_input', `unknown embedding choice "${kind}"`);
      }
      choice = next;
      install(embedderFor(next));
      return status();
    },
    download_embedding_model: async () => {
      if (downloading) return fail('busy', 'the embedding model is already downloading');
      downloading = true;
      try {
        for (const { file, size } of MODEL_FILES) {
          const steps = file === 'model.safetensors' ? BIG_FILE_STEPS : [1];
          for (const fraction of steps) {
            await pace();
            if (failDownload && fraction > 0.5) {
              failDownload = false;
              return fail(DOWNLOAD_FAILURE.code, DOWNLOAD_FAILURE.message);
            }
            await options.emit('model_download_progress', { file, done: Math.round(size * fraction), total: size });
          }
        }
        onDisk.add(localOf(choice));
        if (choice.kind === 'local' && embedder?.model !== choice.model) install(embedderFor(choice));
      } finally {
        downloading = false;
      }
      return status();
    },
  };

  return {
    handlers,
    status,
    setDelay: (ms) => {
      delay = ms;
    },
    hold: () => {
      holding = true;
    },
    step: (count = 1) => {
      credits += count;
      grant();
    },
    release: () => {
      holding = false;
      credits = 0;
      const pending = waiters;
      waiters = [];
      pending.forEach((resolve) => resolve());
    },
    failNextDownload: () => {
      failDownload = true;
    },
    async changeElsewhere(kind, provider = 'local', model = 'nomic-embed-text') {
      choice =
        kind === 'provider'
          ? { kind, provider, model, dimensions: PROVIDER_DIMENSIONS }
          : kind === 'local'
            ? { kind, model: LOCAL_MODEL }
            : { kind };
      install(embedderFor(choice));
      await options.emit('store_changed', null);
    },
  };
}
