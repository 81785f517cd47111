/** Figures for the Usage screen, from `get_usage`. */
import type { UsageRowDto } from '../../lib/bindings/UsageRowDto';

/** `YYYY-MM-DD` of the local day `daysAgo` days before `now`. */
export function localDay(now: Date, daysAgo: number): string {
  const d = new Date(now.getFullYear(), now.getMonth(), now.getDate() - daysAgo);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Every local day from `since` to today, each with its row (an empty one when no calls). */
export function everyDay(since: string, now: Date, rows: UsageRowDto[]): UsageRowDto[] {
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const out: UsageRowDto[] = [];
  for (let ago = 400; ago >= 0; ago--) {
    const key = localDay(now, ago);
    if (key < since) continue;
    out.push(
      byKey.get(key) ?? {
        key,
        calls: 0,
        failed_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cached_input_tokens: 0,
        cost_usd: 0,
        calls_without_price: 0,
        latency_ms_p50: null,
        latency_ms_p95: null,
      },
    );
  }
  return out;
}

/** `$0.0031`, `$1.25`, `$0` — spend in US dollars. */
export function usd(value: number): string {
  if (value === 0) return '$0';
  if (Math.abs(value) < 0.01) return `$${value.toFixed(4)}`;
  return `$${value.toFixed(2)}`;
}

const numbers = new Intl.NumberFormat('en-US');
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

export function count(n: number): string {
  return numbers.format(n);
}

export function tokensShort(n: number): string {
  return compact.format(n);
}

/** "Dec 7" for `2026-12-07`. */
export function dayLabel(key: string): string {
  const [y, m, d] = key.split('-').map(Number);
  if (!y || !m || !d) return key;
  return new Date(y, m - 1, d).toLocaleDateString('en-US', { month: 'short', day: 'numeric' });
}

/** What a slot is for, in words. */
export function slotLabel(key: string): string {
  switch (key) {
    case 'main':
      return 'Answers';
    case 'fallback':
      return 'Answers (fallback model)';
    case 'learning':
      return 'Learning memories';
    case 'compaction':
      return 'Summarising long chats';
    case 'fast':
      return 'Background (older records)';
    default:
      return key;
  }
}

/** The cost of a row, with the calls of unknown price said, never counted as zero. */
export function costText(row: UsageRowDto): string {
  const known = usd(row.cost_usd);
  return row.calls_without_price > 0 ? `${known} + ${count(row.calls_without_price)} of unknown cost` : known;
}
