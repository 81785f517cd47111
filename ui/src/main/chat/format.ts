/** Small formatting helpers for the Chat screen. */

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "just now", "5 minutes ago", "yesterday", "3 weeks ago" … for a time in Unix milliseconds. */
export function relativeTime(millis: number, now: number = Date.now()): string {
  const diff = millis - now;
  const abs = Math.abs(diff);
  if (abs < MINUTE) return 'just now';
  if (abs < HOUR) return relative.format(Math.round(diff / MINUTE), 'minute');
  if (abs < DAY) return relative.format(Math.round(diff / HOUR), 'hour');
  if (abs < 7 * DAY) return relative.format(Math.round(diff / DAY), 'day');
  if (abs < 30 * DAY) return relative.format(Math.round(diff / (7 * DAY)), 'week');
  if (abs < 365 * DAY) return relative.format(Math.round(diff / (30 * DAY)), 'month');
  return relative.format(Math.round(diff / (365 * DAY)), 'year');
}

export function absoluteTime(millis: number): string {
  return absolute.format(new Date(millis));
}

export function isoTime(millis: number): string {
  return new Date(millis).toISOString();
}

/** The badge for an assistant message that didn't finish normally, or null. */
export function stateBadge(state: string): string | null {
  switch (state) {
    case 'stopped':
      return 'Stopped';
    case 'interrupted':
      return 'Interrupted — the answer was cut off';
    case 'failed':
      return 'Failed';
    default:
      return null;
  }
}
