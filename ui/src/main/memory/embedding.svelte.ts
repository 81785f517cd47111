/**
 * Memory → Search model: the embedding model behind memory search, its download and the
 * re-indexing of memories. Lives for the window's lifetime, so a download that is running
 * keeps its progress when the user leaves the Memory screen and comes back. The screen's
 * section (EmbeddingSettings.svelte) feeds it the core's events while it is shown.
 */
import type { EmbeddingProgressEvent } from '../../lib/bindings/EmbeddingProgressEvent';
import type { EmbeddingStatusDto } from '../../lib/bindings/EmbeddingStatusDto';
import type { ModelDownloadEvent } from '../../lib/bindings/ModelDownloadEvent';
import { call, toErrorDto, type ErrorDto } from '../../lib/ipc';

export type EmbeddingChoice =
  | { kind: 'local'; model: string }
  | { kind: 'off' }
  | { kind: 'provider'; provider: string; model: string };

class EmbeddingStore {
  status = $state<EmbeddingStatusDto | null>(null);
  loadError = $state<ErrorDto | null>(null);
  /** This window's `download_embedding_model` call is in flight. */
  downloadRunning = $state(false);
  /** The last `model_download_progress` of the running download. */
  file = $state<ModelDownloadEvent | null>(null);
  downloadError = $state<ErrorDto | null>(null);
  /** The last `embedding_progress`. */
  indexing = $state<EmbeddingProgressEvent | null>(null);
  /** The model just changed (or arrived): memories are being given vectors, events follow. */
  expectIndexing = $state(false);
  private seq = 0;

  /** Downloading now (this window's call, or one the core says is running). */
  get downloading(): boolean {
    return this.downloadRunning || (this.status?.downloading ?? false);
  }

  /** Memories being indexed by the model in use: done of total; null when not indexing. */
  get progress(): { done: number; total: number } | null {
    const status = this.status;
    if (status === null || status.model === null) return null;
    const event = this.indexing?.model === status.model ? this.indexing : null;
    if (event !== null && event.done < event.total) return { done: event.done, total: event.total };
    if (this.expectIndexing && status.embedded < status.memories) {
      return { done: Math.max(status.embedded, event?.done ?? 0), total: status.memories };
    }
    return null;
  }

  private show(status: EmbeddingStatusDto): void {
    this.status = status;
    this.loadError = null;
    if (status.model === null || status.embedded >= status.memories) this.expectIndexing = false;
  }

  /** Read the status again (a later answer wins over an earlier one still on its way). */
  async load(): Promise<void> {
    const mine = ++this.seq;
    try {
      const status = await call('get_embedding_status');
      if (mine === this.seq) this.show(status);
    } catch (reason) {
      if (mine === this.seq) this.loadError = toErrorDto(reason);
    }
  }

  /** A status a command answered with: newer than any read still on its way. */
  private answered(status: EmbeddingStatusDto): void {
    this.seq += 1;
    if (this.indexing !== null && this.indexing.model !== status.model) this.indexing = null;
    this.show(status);
    this.expectIndexing = status.model !== null && status.embedded < status.memories;
  }

  onDownloadProgress(event: ModelDownloadEvent): void {
    this.file = event;
  }

  onIndexingProgress(event: EmbeddingProgressEvent): void {
    const before = this.indexing;
    this.indexing = event;
    if (event.done < event.total) return;
    // Finished (the core repeats the last event; one reload is enough).
    this.expectIndexing = false;
    const already = before !== null && before.model === event.model && before.done >= before.total;
    if (!already) void this.load();
  }

  /** Download the local model; resolves when it is there (or failed: see downloadError). */
  async download(): Promise<void> {
    if (this.downloading) return;
    this.downloadRunning = true;
    this.downloadError = null;
    this.file = null;
    try {
      this.answered(await call('download_embedding_model'));
    } catch (reason) {
      const error = toErrorDto(reason);
      // Already downloading (started before this window knew): show that instead.
      if (error.code === 'busy') void this.load();
      else this.downloadError = error;
    } finally {
      this.downloadRunning = false;
      this.file = null;
    }
  }

  /** Switch the model. Resolves to null, or to why the core refused (nothing changed then). */
  async apply(choice: EmbeddingChoice): Promise<ErrorDto | null> {
    try {
      const status = await call('set_embedding', {
        kind: choice.kind,
        provider: choice.kind === 'provider' ? choice.provider : null,
        model: choice.kind === 'off' ? null : choice.model,
      });
      this.answered(status);
      return null;
    } catch (reason) {
      return toErrorDto(reason);
    }
  }
}

export const embeddingStore = new EmbeddingStore();

const bytes = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1, minimumFractionDigits: 1 });

/** "612 bytes", "466.2 KB", "36.4 MB" (decimal units, as download sizes are usually given). */
export function formatBytes(value: number): string {
  if (value < 1000) return `${Math.round(value)} bytes`;
  if (value < 1_000_000) return `${bytes.format(value / 1000)} KB`;
  return `${bytes.format(value / 1_000_000)} MB`;
}

/** "36.4 of 90.9 MB", "0.6 of 0.6 KB"; "36.4 MB so far" without a total. */
export function formatDownload(done: number, total: number | null): string {
  if (total === null) return `${formatBytes(done)} so far`;
  const unit = total < 1000 ? 'bytes' : total < 1_000_000 ? 'KB' : 'MB';
  const scale = unit === 'bytes' ? 1 : unit === 'KB' ? 1000 : 1_000_000;
  const number = (n: number): string => (unit === 'bytes' ? String(Math.round(n)) : bytes.format(n / scale));
  return `${number(done)} of ${number(total)} ${unit}`;
}
