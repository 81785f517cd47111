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
 */
import { clearMocks, mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import type { Commands, Events } from '../lib/bindings/commands';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { ShortcutStatus } from '../lib/bindings/ShortcutStatus';
import type { StatusDto } from '../lib/bindings/StatusDto';

export const SCENARIOS = ['ok', 'shortcut-taken', 'startup-error', 'key-file'] as const;
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
  };
  window.__hearthMock = control;
  return control;
}
