/**
 * The mock core's built-in model (first run's "Use a built-in model", Settings → Models),
 * with the rules of the shell's `models_cmd.rs` and hearth-core's `BuiltinService`:
 *
 * - the catalogue has three models; on this mock computer (16 GB, 40 GB free) all fit and
 *   the 7B one is recommended unless `?memory=8` (then the 1.5B one; the 7B does not fit);
 * - `download_builtin_model` emits `builtin_download_progress` (bytes, rate, time left) in
 *   ten steps and installs the model; the first model installed is the chat's (chat_status
 *   becomes ready with provider `builtin`); a second download while one runs is `busy`;
 *   `cancel_builtin_download` ends it with `local_model` ("cancelled … resume");
 *   `failNextBuiltinDownload()` makes the next one end with the hash mismatch error;
 * - `add_builtin_model` adds the file `pickModelFile()` chose (a path ending `.gguf`;
 *   anything else is refused with `local_model`); remove deletes, use chooses.
 *
 * Pacing: every download event waits `delay` ms; `hold()` makes each wait for a `step()`.
 */
import type { Events } from '../lib/bindings/commands';
import type { BuiltinCatalogDto } from '../lib/bindings/BuiltinCatalogDto';
import type { BuiltinModelDto } from '../lib/bindings/BuiltinModelDto';
import type { BuiltinStatusDto } from '../lib/bindings/BuiltinStatusDto';
import { fail, sleep, type HandlersFor } from './types';

type BuiltinCommand =
  | 'builtin_catalog'
  | 'list_builtin_models'
  | 'builtin_status'
  | 'download_builtin_model'
  | 'cancel_builtin_download'
  | 'pick_model_file'
  | 'add_builtin_model'
  | 'remove_builtin_model'
  | 'use_builtin_model'
  | 'set_idle_unload';

const MB = 1024 * 1024;
const GIB = 1024 * MB;

/** The download is refused like a file that does not match its pinned hash. */
export const HASH_MISMATCH =
  'the download does not match: SHA-256 of qwen2.5-1.5b-instruct-q4_k_m.gguf is not the pinned one; the file was deleted and nothing was installed';

const CATALOG: Omit<BuiltinCatalogDto, 'fits' | 'fits_disk' | 'recommended' | 'installed'>[] = [
  {
    name: 'qwen2.5-0.5b',
    label: 'Qwen2.5 0.5B Instruct',
    family: 'qwen2',
    parameters: '0.5B',
    quantisation: 'Q4_K_M',
    licence: 'Apache-2.0',
    bytes: 491 * MB,
    memory_bytes: 1020 * MB,
    context: 8192,
    tools: true,
  },
  {
    name: 'qwen2.5-1.5b',
    label: 'Qwen2.5 1.5B Instruct',
    family: 'qwen2',
    parameters: '1.5B',
    quantisation: 'Q4_K_M',
    licence: 'Apache-2.0',
    bytes: 1117 * MB,
    memory_bytes: 1730 * MB,
    context: 8192,
    tools: true,
  },
  {
    name: 'qwen2.5-7b',
    label: 'Qwen2.5 7B Instruct',
    family: 'qwen2',
    parameters: '7B',
    quantisation: 'Q4_K_M',
    licence: 'Apache-2.0',
    bytes: 4683 * MB,
    memory_bytes: 5560 * MB,
    context: 8192,
    tools: true,
  },
];

export type BuiltinMock = {
  handlers: HandlersFor<BuiltinCommand>;
  /** The model the chat would use, if any is installed. */
  main(): string | null;
  setDelay(ms: number): void;
  hold(): void;
  step(count?: number): void;
  release(): void;
  failNextDownload(): void;
  pickModelFile(path: string | null): void;
};

export function createBuiltinMock(options: {
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
  /** This mock computer's memory in GiB. */
  memoryGib: number;
}): BuiltinMock {
  const { emit, memoryGib } = options;
  let models: BuiltinModelDto[] = [];
  let main: string | null = null;
  let idle = 600;
  let delay = 60;
  let held = false;
  let steps = 0;
  let waiters: (() => void)[] = [];
  let downloading: string | null = null;
  let cancelled = false;
  let failNext = false;
  let picked: string | null = '/home/ada/Models/llama-3.2-3b-instruct-q4_k_m.gguf';

  const room = (memoryGib * GIB * 3) / 4;

  function catalog(): BuiltinCatalogDto[] {
    const views = CATALOG.map((entry) => ({
      ...entry,
      fits: entry.memory_bytes <= room,
      fits_disk: true,
      recommended: false,
      installed: models.some((m) => m.name === entry.name),
    }));
    const pick = memoryGib >= 16 ? 'qwen2.5-7b' : memoryGib >= 8 ? 'qwen2.5-1.5b' : 'qwen2.5-0.5b';
    for (const v of views) v.recommended = v.name === pick && v.fits;
    return views;
  }

  function view(m: BuiltinModelDto): BuiltinModelDto {
    const chat = main ?? models[0]?.name ?? null;
    return { ...m, main: m.name === chat, fast: m.name === chat };
  }

  function status(): BuiltinStatusDto {
    const chat = main ?? models[0]?.name ?? null;
    return {
      engine_installed: true,
      running: false,
      model: null,
      resident_bytes: null,
      starts: 0,
      crashes: 0,
      main: chat,
      fast: chat,
      installed: models.length,
      total_memory: memoryGib * GIB,
      idle_unload_s: idle,
      downloading,
    };
  }

  async function pace(): Promise<void> {
    if (!held) {
      await sleep(delay);
      return;
    }
    if (steps > 0) {
      steps -= 1;
      return;
    }
    await new Promise<void>((resolve) => waiters.push(resolve));
  }

  function install(entry: (typeof CATALOG)[number]): BuiltinModelDto {
    const model: BuiltinModelDto = {
      name: entry.name,
      path: `/home/ada/.local/share/hearth/models/${entry.name}-instruct-q4_k_m.gguf`,
      source: 'download',
      architecture: entry.family,
      bytes: entry.bytes,
      memory_bytes: entry.memory_bytes,
      context: entry.context,
      tools: entry.tools,
      fits: entry.memory_bytes <= room,
      main: false,
      fast: false,
      problem: null,
      tokens_per_s: null,
    };
    models = [...models.filter((m) => m.name !== entry.name), model];
    return view(model);
  }

  const handlers: HandlersFor<BuiltinCommand> = {
    builtin_catalog: () => catalog(),
    list_builtin_models: () => models.map(view),
    builtin_status: () => status(),
    download_builtin_model: async ({ name }) => {
      const entry = CATALOG.find((e) => e.name === name);
      if (!entry) return fail('not_found', `there is no model "${name}" in the catalogue; see \`hearth model list\``);
      if (downloading !== null) return fail('busy', `${downloading} is downloading; wait for it or cancel it first`);
      if (entry.memory_bytes > room)
        return fail('local_model', `${entry.label} needs about ${Math.round(entry.memory_bytes / MB)} MB of memory, more than this computer can give it`);
      downloading = name;
      cancelled = false;
      const failing = failNext;
      failNext = false;
      try {
        const total = entry.bytes;
        for (let i = 1; i <= 10; i++) {
          await pace();
          if (cancelled)
            return fail('local_model', `the download of ${entry.label} was cancelled; download it again to resume`);
          const done = Math.round((total * i) / 10);
          const rate = 12 * MB;
          await emit('builtin_download_progress', {
            name,
            done,
            total,
            bytes_per_s: i > 1 ? rate : null,
            eta_s: i > 1 ? Math.ceil((total - done) / rate) : null,
          });
          if (failing && i === 5) return fail('local_model', HASH_MISMATCH);
        }
        const installed = install(entry);
        await emit('store_changed', null);
        return installed;
      } finally {
        downloading = null;
      }
    },
    cancel_builtin_download: () => {
      if (downloading !== null) cancelled = true;
      // A held download must notice: let it take its next step.
      const next = waiters.shift();
      next?.();
      return null;
    },
    pick_model_file: () => picked,
    add_builtin_model: ({ path, name }) => {
      if (!path.endsWith('.gguf'))
        return fail('local_model', `${path} is not a GGUF model file (its first bytes are not "GGUF")`);
      const stem = name?.trim() || (path.split('/').pop() ?? path).replace(/\.gguf$/, '');
      const model: BuiltinModelDto = {
        name: stem,
        path,
        source: 'file',
        architecture: 'llama',
        bytes: 2020 * MB,
        memory_bytes: 2900 * MB,
        context: 8192,
        tools: true,
        fits: true,
        main: false,
        fast: false,
        problem: null,
        tokens_per_s: null,
      };
      models = [...models.filter((m) => m.name !== stem), model];
      return view(model);
    },
    remove_builtin_model: ({ name }) => {
      if (!models.some((m) => m.name === name)) return fail('not_found', `there is no built-in model "${name}"`);
      models = models.filter((m) => m.name !== name);
      if (main === name) main = null;
      return null;
    },
    use_builtin_model: ({ name, fast }) => {
      const model = models.find((m) => m.name === name);
      if (!model) return fail('not_found', `there is no built-in model "${name}"`);
      if (!fast) main = name;
      return view(model);
    },
    set_idle_unload: ({ seconds }) => {
      if (seconds < 60) return fail('invalid_input', 'the model stays loaded at least 60 seconds');
      idle = seconds;
      return status();
    },
  };

  return {
    handlers,
    main: () => main ?? models[0]?.name ?? null,
    setDelay: (ms) => {
      delay = ms;
    },
    hold: () => {
      held = true;
    },
    step: (count = 1) => {
      for (let i = 0; i < count; i++) {
        const next = waiters.shift();
        if (next) next();
        else steps += 1;
      }
    },
    release: () => {
      held = false;
      steps = 0;
      const all = waiters;
      waiters = [];
      for (const w of all) w();
    },
    failNextDownload: () => {
      failNext = true;
    },
    pickModelFile: (path) => {
      picked = path;
    },
  };
}

