/**
 * Helpers for global-shortcut accelerators in Tauri's format, e.g. `CommandOrControl+Shift+Space`.
 * The core is the judge of what is valid; these only display and capture them.
 */

const MODIFIER_LABELS: Record<string, { mac: string; other: string }> = {
  commandorcontrol: { mac: '⌘', other: 'Ctrl' },
  cmdorctrl: { mac: '⌘', other: 'Ctrl' },
  commandorctrl: { mac: '⌘', other: 'Ctrl' },
  cmdorcontrol: { mac: '⌘', other: 'Ctrl' },
  control: { mac: '⌃', other: 'Ctrl' },
  ctrl: { mac: '⌃', other: 'Ctrl' },
  command: { mac: '⌘', other: 'Super' },
  cmd: { mac: '⌘', other: 'Super' },
  super: { mac: '⌘', other: 'Super' },
  meta: { mac: '⌘', other: 'Super' },
  alt: { mac: '⌥', other: 'Alt' },
  option: { mac: '⌥', other: 'Alt' },
  shift: { mac: '⇧', other: 'Shift' },
};

/** Key caps to show for an accelerator: `CommandOrControl+Shift+Space` → `['Ctrl', 'Shift', 'Space']`. */
export function acceleratorKeys(accelerator: string, mac: boolean): string[] {
  return accelerator
    .split('+')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      const modifier = MODIFIER_LABELS[part.toLowerCase()];
      if (modifier) return mac ? modifier.mac : modifier.other;
      return part;
    });
}

/** Spoken/plain form, e.g. "Ctrl+Shift+Space". */
export function acceleratorLabel(accelerator: string, mac: boolean): string {
  return acceleratorKeys(accelerator, mac).join(mac ? '' : '+');
}

const MODIFIER_CODES = new Set([
  'ControlLeft',
  'ControlRight',
  'ShiftLeft',
  'ShiftRight',
  'AltLeft',
  'AltRight',
  'MetaLeft',
  'MetaRight',
  'OSLeft',
  'OSRight',
]);

function keyName(code: string): string | null {
  if (MODIFIER_CODES.has(code)) return null;
  let match = /^Key([A-Z])$/.exec(code);
  if (match) return match[1] ?? null;
  match = /^Digit([0-9])$/.exec(code);
  if (match) return match[1] ?? null;
  match = /^Arrow(Up|Down|Left|Right)$/.exec(code);
  if (match) return match[1] ?? null;
  if (/^F([1-9]|1[0-9]|2[0-4])$/.test(code)) return code;
  if (/^Numpad[0-9]$/.test(code)) return code;
  const named = [
    'Space',
    'Enter',
    'Backspace',
    'Delete',
    'Insert',
    'Home',
    'End',
    'PageUp',
    'PageDown',
    'Comma',
    'Period',
    'Slash',
    'Backslash',
    'Semicolon',
    'Quote',
    'Backquote',
    'Minus',
    'Equal',
    'BracketLeft',
    'BracketRight',
  ];
  return named.includes(code) ? code : null;
}

export type Capture =
  | { kind: 'done'; accelerator: string }
  | { kind: 'waiting' } // only modifiers so far
  | { kind: 'needs-modifier' }
  | { kind: 'unsupported' };

/**
 * Turn a keydown into an accelerator string. The primary modifier (Ctrl, or ⌘ on macOS)
 * becomes `CommandOrControl` so the same shortcut works on every platform.
 */
export function captureAccelerator(event: KeyboardEvent, mac: boolean): Capture {
  const key = keyName(event.code);
  if (key === null) {
    return MODIFIER_CODES.has(event.code) ? { kind: 'waiting' } : { kind: 'unsupported' };
  }
  const parts: string[] = [];
  const primary = mac ? event.metaKey : event.ctrlKey;
  const secondary = mac ? event.ctrlKey : event.metaKey;
  if (primary) parts.push('CommandOrControl');
  if (secondary) parts.push(mac ? 'Control' : 'Super');
  if (event.altKey) parts.push('Alt');
  if (event.shiftKey) parts.push('Shift');
  const isFunctionKey = /^F\d+$/.test(key);
  if (parts.length === 0 && !isFunctionKey) return { kind: 'needs-modifier' };
  // Shift alone is not enough for an ordinary key: it would swallow capital letters.
  if (parts.length === 1 && parts[0] === 'Shift' && !isFunctionKey) {
    return { kind: 'needs-modifier' };
  }
  parts.push(key);
  return { kind: 'done', accelerator: parts.join('+') };
}
