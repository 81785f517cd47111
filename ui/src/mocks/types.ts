/** What every part of the mock core shares: handler tables typed from the bindings, and helpers. */
import type { Commands } from '../lib/bindings/commands';
import type { ErrorDto } from '../lib/bindings/ErrorDto';

/** Handlers for some of the commands, each typed from the generated bindings. */
export type HandlersFor<K extends keyof Commands> = {
  [C in K]: (args: Commands[C]['args']) => Commands[C]['result'] | Promise<Commands[C]['result']>;
};

/** Every command's handler. */
export type Handlers = HandlersFor<keyof Commands>;

/** Reject the command the way the core does: with an `ErrorDto`. */
export const fail = (code: string, message: string): never => {
  const error: ErrorDto = { code, message };
  throw error;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
