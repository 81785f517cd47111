import type { SourceDto } from '../../lib/bindings/SourceDto';
import type { TurnInfoDto } from '../../lib/bindings/TurnInfoDto';
import type { ToolCallEntry } from '../../lib/tool-calls';
import type { Improvement } from '../../lib/turn';

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
  /** For an answer: its tool calls, in order (a running one has `call: null`). */
  toolCalls: ToolCallEntry[];
  /**
   * For an answer of this session: why its run ended (`answer`, `cap`, `cancelled`,
   * `timeout`); null when unknown (a stored answer does not keep it).
   */
  stopReason: string | null;
  /** While a cascade's strong model answers again: why, and the fast answer set aside. */
  improving?: Improvement | null;
  /** While the provider's rate limit holds the next call: what to tell the user. */
  waiting?: string | null;
};
