/**
 * The only door between the UI and Hearth's core.
 *
 * Every command and event is typed from the bindings in `./bindings` (generated from the
 * Rust side by ts-rs), so a change there breaks the type check here instead of at run time.
 * UI code must call `call` / `on` / `subscribe` and never `invoke` / `listen` directly.
 */
import { invoke } from '@tauri-apps/api/core';
import { getCurrentWebviewWindow } from '@tauri-apps/api/webviewWindow';
import type { Commands, Events } from './bindings/commands';
import type { ErrorDto } from './bindings/ErrorDto';

export type { Commands, Events, ErrorDto };

/** Code used when the page runs outside the Hearth app (plain browser, no core to talk to). */
export const CORE_UNAVAILABLE = 'core_unavailable';

function coreAvailable(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}

function unavailable(): ErrorDto {
  return {
    code: CORE_UNAVAILABLE,
    message: "Hearth's core isn't reachable: this page is running outside the Hearth app.",
  };
}

export function isErrorDto(value: unknown): value is ErrorDto {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<string, unknown>).code === 'string' &&
    typeof (value as Record<string, unknown>).message === 'string'
  );
}

/** Turn whatever a command rejected with into an `ErrorDto`. */
export function toErrorDto(reason: unknown): ErrorDto {
  if (isErrorDto(reason)) return { code: reason.code, message: reason.message };
  if (typeof reason === 'string') return { code: 'unknown', message: reason };
  if (reason instanceof Error) return { code: 'unknown', message: reason.message };
  let message: string;
  try {
    message = JSON.stringify(reason) ?? String(reason);
  } catch {
    message = String(reason);
  }
  return { code: 'unknown', message };
}

/** Invoke a core command. Rejects with an `ErrorDto`. */
export async function call<K extends keyof Commands>(
  cmd: K,
  args?: Commands[K]['args'],
): Promise<Commands[K]['result']> {
  if (!coreAvailable()) throw unavailable();
  try {
    return await invoke<Commands[K]['result']>(cmd, args ?? {});
  } catch (reason) {
    throw toErrorDto(reason);
  }
}

/**
 * Listen to a core event sent to this window (or to every window). Resolves to a function
 * that stops listening. Rejects with an `ErrorDto`. A turn's events and `memory_updated`
 * are sent to one window only; listening as this window keeps another window's out.
 */
export async function on<K extends keyof Events>(
  event: K,
  handler: (payload: Events[K]) => void,
): Promise<() => void> {
  if (!coreAvailable()) throw unavailable();
  try {
    return await getCurrentWebviewWindow().listen<Events[K]>(event, (e) => handler(e.payload));
  } catch (reason) {
    throw toErrorDto(reason);
  }
}

/**
 * `on`, shaped for component effects: returns a synchronous disposer that also works if
 * it is called before the listener finished registering. Failures to listen are logged,
 * not thrown: the screen still works, it just won't refresh by itself.
 */
export function subscribe<K extends keyof Events>(
  event: K,
  handler: (payload: Events[K]) => void,
): () => void {
  let disposed = false;
  let stop: (() => void) | undefined;
  on(event, handler).then(
    (unlisten) => {
      if (disposed) unlisten();
      else stop = unlisten;
    },
    (reason: unknown) => {
      const error = toErrorDto(reason);
      if (error.code !== CORE_UNAVAILABLE) {
        console.warn(`Hearth: couldn't listen to "${event}": ${error.message}`);
      }
    },
  );
  return () => {
    disposed = true;
    stop?.();
    stop = undefined;
  };
}
