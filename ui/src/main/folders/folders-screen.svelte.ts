/**
 * The Folders screen's state and actions (the screen lays it out: ../screens/Folders.svelte).
 *
 * - The list is the core's (`list_folders`), read again on `store_changed` (this app's
 *   indexer or another process: `hearth folders add`, `hearth index`) and, throttled, on
 *   `index_progress`, whose `done`/`total` also drive the "Indexing n of m files" line.
 * - Adding: a path typed or chosen with the OS picker (`pick_folder`), then `add_folder`; the
 *   core refuses a missing path, a file, or a folder inside or around one already watched.
 * - Removing asks first (what Hearth read goes; the files themselves are not touched).
 * - Search runs as the user types (debounced), over every folder or the one chosen.
 */
import type { ErrorDto } from '../../lib/bindings/ErrorDto';
import type { FileDto } from '../../lib/bindings/FileDto';
import type { FolderDto } from '../../lib/bindings/FolderDto';
import type { IndexProgressEvent } from '../../lib/bindings/IndexProgressEvent';
import type { SearchResultDto } from '../../lib/bindings/SearchResultDto';
import { call, subscribe, toErrorDto } from '../../lib/ipc';
import { notify } from '../../lib/toast.svelte';

export const FILE_FILTERS = ['all', 'indexed', 'pending', 'skipped', 'failed'] as const;
export type FileFilter = (typeof FILE_FILTERS)[number];

const SEARCH_DEBOUNCE_MS = 200;
const REFRESH_MS = 250;

export class FoldersScreen {
  folders = $state<FolderDto[] | null>(null);
  listError = $state<ErrorDto | null>(null);
  /** The indexer's run: files done of total (null before the first event or once idle). */
  progress = $state<IndexProgressEvent | null>(null);

  // Adding
  adding = $state(false);
  addPath = $state('');
  addError = $state<ErrorDto | null>(null);
  addBusy = $state(false);

  // Removing
  removing = $state<FolderDto | null>(null);
  removeBusy = $state(false);

  // Files of one folder
  filesOf = $state<string | null>(null);
  fileFilter = $state<FileFilter>('all');
  files = $state<FileDto[] | null>(null);
  filesError = $state<ErrorDto | null>(null);

  // Search
  query = $state('');
  searchFolder = $state<string | null>(null);
  results = $state<SearchResultDto | null>(null);
  searchError = $state<ErrorDto | null>(null);
  searching = $state(false);

  /** The passage open in the passage view (a search hit's chunk). */
  passageId = $state<number | null>(null);

  now = $state(Date.now());

  private listSeq = 0;
  private searchSeq = 0;
  private filesSeq = 0;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;

  start(): () => void {
    void this.load();
    const clock = setInterval(() => (this.now = Date.now()), 30_000);
    const stops = [
      subscribe('store_changed', () => this.refreshSoon()),
      subscribe('index_progress', (p) => {
        this.progress = p.total > 0 && p.done < p.total ? p : null;
        this.refreshSoon();
      }),
    ];
    return () => {
      clearInterval(clock);
      clearTimeout(this.refreshTimer);
      clearTimeout(this.searchTimer);
      stops.forEach((stop) => stop());
    };
  }

  get isEmpty(): boolean {
    return this.folders !== null && this.folders.length === 0;
  }

  get anyIndexing(): boolean {
    return this.folders?.some((f) => f.state === 'indexing') ?? false;
  }

  private refreshSoon(): void {
    if (this.refreshTimer !== undefined) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.load();
      if (this.filesOf !== null) void this.loadFiles();
      if (this.query.trim() !== '') void this.runSearch();
    }, REFRESH_MS);
  }

  async load(): Promise<void> {
    const mine = ++this.listSeq;
    try {
      const list = await call('list_folders');
      if (mine !== this.listSeq) return;
      this.folders = list;
      this.listError = null;
      if (!list.some((f) => f.state === 'indexing')) this.progress = null;
      if (this.filesOf !== null && !list.some((f) => f.path === this.filesOf)) this.filesOf = null;
      if (this.searchFolder !== null && !list.some((f) => f.path === this.searchFolder)) this.searchFolder = null;
    } catch (reason) {
      if (mine === this.listSeq) this.listError = toErrorDto(reason);
    }
  }

  // ---- Adding ----

  readonly toggleAdd = (): void => {
    this.adding = !this.adding;
    this.addError = null;
  };

  readonly browse = async (): Promise<void> => {
    try {
      const picked = await call('pick_folder');
      if (picked !== null) {
        this.addPath = picked;
        await this.add();
      }
    } catch (reason) {
      this.addError = toErrorDto(reason);
    }
  };

  readonly add = async (): Promise<void> => {
    const path = this.addPath.trim();
    if (path === '') {
      this.addError = { code: 'invalid_input', message: 'Type the folder’s full path, or choose it with Browse.' };
      return;
    }
    this.addBusy = true;
    try {
      const added = await call('add_folder', { path });
      this.addError = null;
      this.addPath = '';
      this.adding = false;
      const what = added.queued > 0 ? `${added.queued} ${added.queued === 1 ? 'file' : 'files'} to read` : 'nothing new to read';
      notify(`Watching ${added.folder.name}: ${what}.`);
      await this.load();
    } catch (reason) {
      this.addError = toErrorDto(reason);
    } finally {
      this.addBusy = false;
    }
  };

  // ---- Each folder ----

  readonly setPaused = async (folder: FolderDto, paused: boolean): Promise<void> => {
    try {
      await call('set_folder_paused', { path: folder.path, paused });
      await this.load();
    } catch (reason) {
      notify(`Couldn't ${paused ? 'pause' : 'resume'} ${folder.name}: ${toErrorDto(reason).message}`, 'error');
    }
  };

  readonly setWritable = async (folder: FolderDto, writable: boolean): Promise<void> => {
    try {
      await call('set_folder_writable', { path: folder.path, writable });
      await this.load();
    } catch (reason) {
      notify(`Couldn't change what tools may do in ${folder.name}: ${toErrorDto(reason).message}`, 'error');
    }
  };

  readonly confirmRemove = async (): Promise<void> => {
    const folder = this.removing;
    if (!folder) return;
    this.removeBusy = true;
    try {
      await call('remove_folder', { path: folder.path });
      this.removing = null;
      notify(`Hearth no longer reads ${folder.name}. Your files were not touched.`);
      await this.load();
      if (this.query.trim() !== '') void this.runSearch();
    } catch (reason) {
      notify(`Couldn't remove ${folder.name}: ${toErrorDto(reason).message}`, 'error');
    } finally {
      this.removeBusy = false;
    }
  };

  readonly toggleFiles = (folder: FolderDto): void => {
    if (this.filesOf === folder.path) {
      this.filesOf = null;
      return;
    }
    this.filesOf = folder.path;
    this.fileFilter = folder.failed > 0 ? 'failed' : folder.skipped > 0 ? 'skipped' : 'all';
    this.files = null;
    void this.loadFiles();
  };

  readonly setFileFilter = (filter: FileFilter): void => {
    this.fileFilter = filter;
    void this.loadFiles();
  };

  async loadFiles(): Promise<void> {
    const path = this.filesOf;
    if (path === null) return;
    const mine = ++this.filesSeq;
    try {
      const list = await call('list_folder_files', { path, status: this.fileFilter === 'all' ? null : this.fileFilter });
      if (mine !== this.filesSeq) return;
      this.files = list;
      this.filesError = null;
    } catch (reason) {
      if (mine === this.filesSeq) this.filesError = toErrorDto(reason);
    }
  }

  // ---- Search ----

  readonly onQuery = (): void => {
    clearTimeout(this.searchTimer);
    if (this.query.trim() === '') {
      this.results = null;
      this.searchError = null;
      return;
    }
    this.searchTimer = setTimeout(() => void this.runSearch(), SEARCH_DEBOUNCE_MS);
  };

  readonly setSearchFolder = (path: string | null): void => {
    this.searchFolder = path;
    if (this.query.trim() !== '') void this.runSearch();
  };

  async runSearch(): Promise<void> {
    const query = this.query.trim();
    if (query === '') return;
    const mine = ++this.searchSeq;
    this.searching = true;
    try {
      const found = await call('search_documents', { query, folder: this.searchFolder, mode: null, limit: 10 });
      if (mine !== this.searchSeq) return;
      this.results = found;
      this.searchError = null;
    } catch (reason) {
      if (mine === this.searchSeq) this.searchError = toErrorDto(reason);
    } finally {
      if (mine === this.searchSeq) this.searching = false;
    }
  }
}
