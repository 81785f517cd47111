/**
 * The tool calls of one answer, as the Chat screen and the quick prompt show them.
 *
 * While a turn runs, `chat_tool_started` adds a call that is still running (`call: null`: the
 * consent gate is checking it, it may be waiting for the user, or it runs) and `chat_tool`
 * fills it in when it ended; `chat_done` (and `get_messages` for a stored answer) gives the
 * whole list, which is the truth.
 *
 * Everything in a call (its arguments, its result) is untrusted text: show it as text, never
 * as Markdown or HTML.
 */
import type { ToolCallDto } from './bindings/ToolCallDto';

export type { ToolCallDto };

/** One call of an answer: `call` is null while it runs. */
export type ToolCallEntry = {
  call_id: string;
  tool: string;
  call: ToolCallDto | null;
};

/** The entries for calls that ended (a stored answer, or `chat_done`). */
export function entriesFrom(calls: readonly ToolCallDto[]): ToolCallEntry[] {
  return calls.map((call) => ({ call_id: call.call_id, tool: call.tool, call }));
}

/** `list` with a call that just started (`chat_tool_started`) appended. */
export function withStarted(list: readonly ToolCallEntry[], callId: string, tool: string): ToolCallEntry[] {
  return [...list, { call_id: callId, tool, call: null }];
}

/**
 * `list` with `call` ended (`chat_tool`): it replaces the first running entry of the same id
 * (ids are the model's and may repeat in a turn: a duplicate is refused as invalid), or is
 * appended when it never showed as started.
 */
export function withEnded(list: readonly ToolCallEntry[], call: ToolCallDto): ToolCallEntry[] {
  const at = list.findIndex((entry) => entry.call === null && entry.call_id === call.call_id);
  const ended: ToolCallEntry = { call_id: call.call_id, tool: call.tool, call };
  if (at < 0) return [...list, ended];
  return [...list.slice(0, at), ended, ...list.slice(at + 1)];
}

/** How a call's outcome looks: `ok` ran, `denied` was not allowed, `failed` went wrong, `muted` did not run. */
export type OutcomeTone = 'running' | 'ok' | 'denied' | 'failed' | 'muted';

export type Outcome = {
  /** The outcome in words: "ran", "denied by you", "failed" … */
  text: string;
  tone: OutcomeTone;
};

export const RUNNING: Outcome = { text: 'running…', tone: 'running' };

/** Who let an allowed call run, when it was not Hearth's own rule (a read runs by itself). */
function allowedBy(decidedBy: string): string | null {
  switch (decidedBy) {
    case 'user':
      return 'allowed by you';
    case 'grant':
      return 'allowed by your grant';
    case 'allow_writes':
      return 'allowed by --allow-writes';
    default:
      return null;
  }
}

/** Why a call was denied, in words. */
function deniedText(decidedBy: string): string {
  switch (decidedBy) {
    case 'user':
      return 'denied by you';
    case 'timeout':
      return 'denied: no answer in time';
    case 'policy_no_tty':
      return 'denied: no one could be asked';
    default:
      return 'denied';
  }
}

/** What happened to a call, in words (the entry's one line). */
export function outcomeOf(call: ToolCallDto | null): Outcome {
  if (call === null) return RUNNING;
  if (call.decision === 'invalid') return { text: 'refused', tone: 'denied' };
  if (call.decision === 'denied') return { text: deniedText(call.decided_by), tone: 'denied' };
  const by = allowedBy(call.decided_by);
  const withWho = (text: string): string => (by ? `${text} · ${by}` : text);
  switch (call.result_status) {
    case 'ok':
      return { text: withWho('ran'), tone: 'ok' };
    case 'error':
      return { text: withWho('failed'), tone: 'failed' };
    case 'timeout':
      return { text: withWho('timed out'), tone: 'failed' };
    case 'cancelled':
      return { text: 'not run: stopped', tone: 'muted' };
    case 'not_run':
    default:
      return { text: 'not run', tone: 'muted' };
  }
}

/** The heading over a call's result: what it returned, or why it did not run. */
export function resultLabel(call: ToolCallDto): string {
  if (call.result_status === 'ok') return 'Result';
  if (call.result_status === 'error' || call.result_status === 'timeout') return 'What went wrong';
  return 'Why it did not run';
}

/** Where a tool comes from, in words. */
export function originText(origin: string): string {
  if (origin === 'built_in') return 'Hearth (built in)';
  if (origin.startsWith('mcp:')) return `${origin.slice(4)} (MCP server)`;
  return origin;
}

/** The note under an answer whose run did not end with the model's own answer, or null. */
export function stopReasonNote(reason: string | null | undefined): string | null {
  switch (reason) {
    case 'cap':
      return 'Stopped at the limit for tool calls in one turn (their number, tokens or cost); the answer uses what they returned.';
    case 'timeout':
      return 'Stopped: the time for tool calls ran out; the answer uses what they returned.';
    default:
      // 'answer' is the normal end; 'cancelled' already shows the "Stopped" badge.
      return null;
  }
}
