import type { SourceDto } from '../../lib/bindings/SourceDto';
import type { TurnInfoDto } from '../../lib/bindings/TurnInfoDto';

/** A message as the Chat screen shows it. */
export type Message = {
  /** Stable within the screen (keyed rendering, context selection). */
  key: string;
  /** The stored message id, when known. */
  id: number | null;
  role: 'user' | 'assistant';
  content: string;
  /** complete | streaming | stopped | interrupted | failed */
  state: string;
  /** For an answer: model, tokens, cost and context zones (null when unknown). */
  turn: TurnInfoDto | null;
  /** For an answer: the passages of the user's files it was given, [1] first. */
  sources: SourceDto[];
};
