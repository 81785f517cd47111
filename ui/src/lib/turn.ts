/** Formatting for what an answer cost (TurnInfoDto). */
import type { TurnInfoDto } from './bindings/TurnInfoDto';

const numbers = new Intl.NumberFormat('en-US');

export function tokens(n: number): string {
  return numbers.format(n);
}

/** `$0.0031`, `$1.25`, `free (local)` for 0, `cost unknown` for null. */
export function formatCost(usd: number | null): string {
  if (usd === null || !Number.isFinite(usd)) return 'cost unknown';
  if (usd === 0) return 'free (local)';
  if (usd < 0.0001) return '< $0.0001';
  if (usd < 1) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** A context window in short: 131072 → "128K", 200000 → "200K", 1048576 → "1M". */
export function compactTokens(n: number): string {
  const binary = n % 1024 === 0;
  if (n >= 1_000_000) {
    const m = binary && n % 1_048_576 === 0 ? n / 1_048_576 : n / 1_000_000;
    return `${Number(m.toFixed(1))}M`;
  }
  if (n >= 1000) return `${Math.round(binary ? n / 1024 : n / 1000)}K`;
  return String(n);
}

/** The parts of the usage line under an answer, e.g. ["llama3.2", "52 in", "18 out", "free (local)"]. */
export function usageParts(turn: TurnInfoDto): string[] {
  const parts: string[] = [];
  if (turn.cached) {
    parts.push(
      turn.cached_from === null
        ? `saved answer from ${turn.model} (no model was called)`
        : `saved reply from ${turn.model} (no model was called)`,
    );
    return parts;
  }
  if (turn.model) parts.push(turn.route ? `${turn.model} (${turn.route.text})` : turn.model);
  parts.push(`${tokens(turn.input_tokens)} tokens in`, `${tokens(turn.output_tokens)} out`);
  if (turn.cached_input_tokens > 0) parts.push(`${tokens(turn.cached_input_tokens)} cached`);
  parts.push(formatCost(turn.cost_usd));
  return parts;
}

/** The notice an answer from the fallback model carries, or null. */
export function fallbackNotice(turn: TurnInfoDto | null): string | null {
  if (!turn?.fallback_from) return null;
  const model = turn.model || 'the fallback model';
  return `The main model (${turn.fallback_from}) failed; this answer came from the fallback model ${model}.`;
}

/** What an answer a cascade improved shows: who improved it, why, and the first answer. */
export type Improvement = { label: string; from: string; first: string };

/** The escalation reason in words, from a route's text ("strong — escalated: X" → "X"). */
function escalationReason(text: string): string {
  const at = text.indexOf('escalated: ');
  return at >= 0 ? text.slice(at + 'escalated: '.length) : text;
}

/** "Improved by big-model: the fast answer was cut off", with the first answer, or null. */
export function improvement(turn: TurnInfoDto | null): Improvement | null {
  const from = turn?.route?.escalated_from;
  if (!turn || !from || turn.first_answer === null) return null;
  return {
    label: `Improved by ${turn.model}: ${escalationReason(turn.route?.text ?? '')}`,
    from,
    first: turn.first_answer,
  };
}

/** While the strong model answers again: "big-model is answering again: the fast answer was cut off". */
export function improving(event: { from: string; to: string; text: string }, first: string): Improvement {
  return {
    label: `${event.to} is answering again: ${escalationReason(event.text)}`,
    from: event.from,
    first,
  };
}

/** What the user reads while a provider's rate limit holds the next call. */
export function waitingText(event: { provider: string; seconds: number }): string {
  const wait = event.seconds >= 120 ? `about ${Math.ceil(event.seconds / 60)} minutes` : `about ${event.seconds} s`;
  return `${event.provider} asked Hearth to slow down: waiting ${wait} for its rate limit. The answer follows by itself; Stop ends the wait.`;
}
