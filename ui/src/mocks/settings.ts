/**
 * The mock core's status and the quick-prompt shortcut: `get_status` (scenario `key-file`
 * warns about a key kept in a plain file, `startup-error` fails), the shortcut (taken by
 * another application in `shortcut-taken`; `set_shortcut` checks the accelerator roughly as
 * the shell does and emits `shortcut_changed`) and the window commands, which do nothing here.
 */
import type { Events } from '../lib/bindings/commands';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { ShortcutStatus } from '../lib/bindings/ShortcutStatus';
import type { StatusDto } from '../lib/bindings/StatusDto';
import type { HandlersFor } from './types';
import type { Scenario } from './scenarios';

export const MOCK_STATUS: StatusDto = {
  version: '0.1.0',
  commit: '4de093e1a2',
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

type SettingsCommand =
  | 'get_status'
  | 'get_shortcut'
  | 'set_shortcut'
  | 'toggle_quick_prompt'
  | 'hide_quick_prompt'
  | 'show_main_window'
  | 'hide_main_window';

export type SettingsMock = {
  handlers: HandlersFor<SettingsCommand>;
  /** What get_status returns now (a copy). */
  status(): StatusDto;
  setStatus(patch: Partial<StatusDto>): void;
};

export function createSettingsMock(options: {
  scenario: Scenario;
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
}): SettingsMock {
  const { scenario, emit } = options;
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

  const handlers: HandlersFor<SettingsCommand> = {
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
    hide_main_window: () => null,
  };

  return {
    handlers,
    status: () => structuredClone(status),
    setStatus: (patch) => {
      status = { ...status, ...patch };
    },
  };
}
