/**
 * The built-in model's state, shared by the first-run choice (Chat) and Settings → Models:
 * the catalogue fitted to this computer, the installed models, what the engine is doing, and
 * the download in progress with its bytes, rate and time left. Lives for the window's
 * lifetime, so a download started on first run still shows in Settings.
 */
import { call, subscribe, toErrorDto, type ErrorDto } from '../../lib/ipc';
import type { BuiltinCatalogDto } from '../../lib/bindings/BuiltinCatalogDto';
import type { BuiltinDownloadEvent } from '../../lib/bindings/BuiltinDownloadEvent';
import type { BuiltinModelDto } from '../../lib/bindings/BuiltinModelDto';
import type { BuiltinStatusDto } from '../../lib/bindings/BuiltinStatusDto';

class BuiltinStore {
  catalog = $state<BuiltinCatalogDto[]>([]);
  models = $state<BuiltinModelDto[]>([]);
  status = $state<BuiltinStatusDto | null>(null);
  loadError = $state<ErrorDto | null>(null);
  loaded = $state(false);
  /** The download running now (its model's name) and its last progress event. */
  downloading = $state<string | null>(null);
  progress = $state<BuiltinDownloadEvent | null>(null);
  /** How the last download ended badly, by model. */
  downloadError = $state<{ name: string; error: ErrorDto } | null>(null);
  private listening = false;

  /** The model Hearth recommends for this computer, if any fits. */
  recommended = $derived(this.catalog.find((m) => m.recommended) ?? null);

  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    subscribe('builtin_download_progress', (event) => {
      if (this.downloading === null) this.downloading = event.name;
      if (event.name === this.downloading) this.progress = event;
    });
  }

  async load(): Promise<void> {
    this.listen();
    try {
      const [catalog, models, status] = await Promise.all([
        call('builtin_catalog'),
        call('list_builtin_models'),
        call('builtin_status'),
      ]);
      this.catalog = catalog;
      this.models = models;
      this.status = status;
      if (status.downloading !== null && this.downloading === null) this.downloading = status.downloading;
      this.loadError = null;
    } catch (reason) {
      this.loadError = toErrorDto(reason);
    } finally {
      this.loaded = true;
    }
  }

  /** Downloads and installs `name`; resolves with the model, or null when it failed (see downloadError). */
  async download(name: string): Promise<BuiltinModelDto | null> {
    this.listen();
    if (this.downloading !== null) return null;
    this.downloading = name;
    this.progress = null;
    this.downloadError = null;
    try {
      const model = await call('download_builtin_model', { name });
      return model;
    } catch (reason) {
      this.downloadError = { name, error: toErrorDto(reason) };
      return null;
    } finally {
      this.downloading = null;
      this.progress = null;
      await this.load();
    }
  }

  async cancel(): Promise<void> {
    await call('cancel_builtin_download');
  }
}

export const builtin = new BuiltinStore();

const UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB'];

/** "1.1 GB", "491 MB": a size as people read it (binary units, as the OS's file manager). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${Math.round(value)} bytes`;
  const digits = value >= 10 || unit <= 1 ? 0 : 1;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** "about 2 minutes left", "about 40 seconds left". */
export function formatEta(seconds: number): string {
  if (seconds < 60) return `about ${Math.max(1, Math.round(seconds))} s left`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} min left`;
  const hours = Math.floor(minutes / 60);
  return `about ${hours} h ${minutes % 60} min left`;
}

/** The progress line of a download: "512 MB of 1.1 GB · 12 MB/s · about 50 s left". */
export function progressText(event: BuiltinDownloadEvent | null): string {
  if (event === null) return 'Starting the download…';
  const parts = [event.total === null ? formatBytes(event.done) : `${formatBytes(event.done)} of ${formatBytes(event.total)}`];
  if (event.bytes_per_s !== null) parts.push(`${formatBytes(event.bytes_per_s)}/s`);
  if (event.eta_s !== null && event.total !== null && event.done < event.total) parts.push(formatEta(event.eta_s));
  return parts.join(' · ');
}
