/** Words, labels and date arithmetic for the Memory screen. */
import type { MemoryCountsDto } from '../../lib/bindings/MemoryCountsDto';
import type { MemoryDto } from '../../lib/bindings/MemoryDto';
import type { IconName } from '../../lib/components/Icon.svelte';

export const KINDS = ['fact', 'preference', 'episode', 'instruction'] as const;
export type Kind = (typeof KINDS)[number];

export const KIND_INFO: Record<Kind, { one: string; many: string; hint: string }> = {
  fact: { one: 'Fact', many: 'Facts', hint: 'About you and your life' },
  preference: { one: 'Preference', many: 'Preferences', hint: 'What you like, and how' },
  episode: { one: 'Episode', many: 'Episodes', hint: 'Things that happened' },
  instruction: { one: 'Instruction', many: 'Instructions', hint: 'How you want Hearth to answer' },
};

export const SOURCES = ['conversation', 'file', 'manual', 'import'] as const;
export type SourceKind = (typeof SOURCES)[number];

export const SOURCE_INFO: Record<SourceKind, { label: string; filter: string; icon: IconName }> = {
  conversation: { label: 'From a conversation', filter: 'Conversations', icon: 'chat' },
  file: { label: 'From a file', filter: 'Files', icon: 'file' },
  manual: { label: 'Added by you', filter: 'Added by you', icon: 'user' },
  import: { label: 'Imported', filter: 'Imports', icon: 'download' },
};

export function isKind(value: string): value is Kind {
  return (KINDS as readonly string[]).includes(value);
}

export function kindLabel(kind: string, many = false): string {
  return isKind(kind) ? KIND_INFO[kind][many ? 'many' : 'one'] : kind;
}

export function sourceInfo(kind: string): { label: string; filter: string; icon: IconName } {
  return (SOURCES as readonly string[]).includes(kind)
    ? SOURCE_INFO[kind as SourceKind]
    : { label: 'Unknown source', filter: kind, icon: 'memory' };
}

const numbers = new Intl.NumberFormat(undefined);

export function formatNumber(value: number): string {
  return numbers.format(value);
}

/** "1 memory", "3 memories". */
export function plural(count: number, one: string, many: string): string {
  return `${formatNumber(count)} ${count === 1 ? one : many}`;
}

export function activeTotal(counts: MemoryCountsDto): number {
  return counts.fact + counts.preference + counts.episode + counts.instruction;
}

/** Pinned and critical memories alone take more than 80% of the memory budget. */
export function nearBudget(counts: MemoryCountsDto): boolean {
  return counts.budget > 0 && counts.always_tokens > 0.8 * counts.budget;
}

const always = new Intl.RelativeTimeFormat(undefined, { numeric: 'always' });

/** "2 days ago", "1 week ago" (never "yesterday" or "last week": it follows "last …"). */
export function ago(millis: number, now: number = Date.now()): string {
  const MINUTE = 60_000;
  const HOUR = 60 * MINUTE;
  const DAY = 24 * HOUR;
  const diff = millis - now;
  const abs = Math.abs(diff);
  if (abs < MINUTE) return 'just now';
  if (abs < HOUR) return always.format(Math.round(diff / MINUTE), 'minute');
  if (abs < DAY) return always.format(Math.round(diff / HOUR), 'hour');
  if (abs < 7 * DAY) return always.format(Math.round(diff / DAY), 'day');
  if (abs < 30 * DAY) return always.format(Math.round(diff / (7 * DAY)), 'week');
  if (abs < 365 * DAY) return always.format(Math.round(diff / (30 * DAY)), 'month');
  return always.format(Math.round(diff / (365 * DAY)), 'year');
}

/** "Used 4 times, last 2 days ago" / "Used once, last …" / "Not used yet". */
export function usage(memory: MemoryDto, now: number = Date.now()): string {
  if (memory.use_count === 0 || memory.last_used === null) {
    return memory.use_count > 0 ? `Used ${plural(memory.use_count, 'time', 'times')}` : 'Not used yet';
  }
  const times = memory.use_count === 1 ? 'once' : `${formatNumber(memory.use_count)} times`;
  return `Used ${times}, last ${ago(memory.last_used, now)}`;
}

/** 0–1 importance in words. */
export function importanceLabel(value: number): string {
  const word = value >= 0.7 ? 'High' : value >= 0.4 ? 'Medium' : 'Low';
  return `${word} (${value.toFixed(1)})`;
}

export function percent(value: number): string {
  return `${Math.round(Math.max(0, Math.min(1, value)) * 100)}%`;
}

/** `home_city` → "home city". */
export function subjectLabel(subject: string): string {
  return subject.replace(/[_-]+/g, ' ').trim();
}

/** "2025-03-14" → local midnight of that day (ms), or null when not a date. */
export function dayStart(value: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return null;
  const date = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return Number.isNaN(date.getTime()) ? null : date.getTime();
}

/** "2025-03-14" → local midnight of the next day (ms): the exclusive end of a range ending that day. */
export function dayAfter(value: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return null;
  const date = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + 1);
  return Number.isNaN(date.getTime()) ? null : date.getTime();
}

/** Local date as yyyy-mm-dd (for <input type="date">). */
export function isoDay(millis: number): string {
  const d = new Date(millis);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

export function formatDay(millis: number): string {
  return dayFormat.format(new Date(millis));
}

/** Shortened for an accessible name: "Lives in Lyon, France", "Keep answers short and use…". */
export function excerpt(text: string, max = 48): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

/** First letter up: the core's messages start lower-case ("line 2 is not a Hearth memory"). */
export function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export const HISTORY_OPS: Record<string, string> = {
  add: 'Added',
  update: 'Changed',
  pin: 'Pinned',
  unpin: 'Unpinned',
  critical: 'Marked critical',
  uncritical: 'No longer critical',
  remove: 'Removed',
  restore: 'Restored',
  merge: 'Merged',
  delete: 'Deleted (text not kept)',
  import: 'Imported',
  supersede: 'No longer true (replaced by a newer memory)',
  unsupersede: 'True again',
};

/** The facets a memory touches, as the detail panel names them. */
const FACETS: Record<string, string> = {
  health: 'Health & diet',
  family: 'Family',
  home: 'Home',
  work: 'Work',
  money: 'Money',
  travel: 'Travel & documents',
  schedule: 'Schedule',
  leisure: 'Leisure',
  style: 'Style of answers',
};

export function facetLabel(facet: string): string {
  return FACETS[facet] ?? sentence(facet);
}

export function historyOp(op: string): string {
  return HISTORY_OPS[op] ?? sentence(op);
}

export function actorLabel(actor: string): string {
  switch (actor) {
    case 'assistant':
      return 'by Hearth';
    case 'user':
      return 'by you';
    case 'import':
      return 'from an import';
    default:
      return actor ? `by ${actor}` : '';
  }
}

/** The heading over pending proposals: "Hearth suggests changes to 2 protected memories". */
export function proposalsHeading(count: number): string {
  return count === 1
    ? 'Hearth suggests a change to a protected memory'
    : `Hearth suggests changes to ${formatNumber(count)} protected memories`;
}
