/**
 * The mock core's watched folders (the Folders screen, search over the user's files and an
 * answer's sources), with the rules of the shell's `folders_cmd.rs` and hearth-core's
 * `FolderService`:
 *
 * - `add_folder` refuses a missing path or a file (`invalid_input`), a folder inside or around
 *   one already watched (`invalid_input`, naming it); the same folder again is the same folder;
 * - a new folder's files are pending, then indexed one at a time "in the background":
 *   `index_progress` {done, total} after each file and `store_changed`; keyword search finds a
 *   file as soon as it is indexed; vectors (`chunks_embedded`) follow;
 * - a paused folder indexes nothing until resumed; pausing with no path pauses every folder;
 * - removing a folder forgets its files and chunks (an answer's sources of it go);
 * - `open_source_file` opens (or reveals) only a passage's file that is still there;
 * - `pick_folder` answers what `pickFolder(path)` set (default /home/ada/Documents; null:
 *   the user cancelled).
 *
 * Seeded (every scenario but startup-error): /home/ada/Notes, indexed: notes, a PDF with
 * pages, one skipped binary and one failed document.
 * Pacing: one file every `delay` ms (setFolderDelay, default 90); `hold()` makes each file wait
 * for `step()`.
 */
import type { Commands, Events } from '../lib/bindings/commands';
import type { FileDto } from '../lib/bindings/FileDto';
import type { FolderDto } from '../lib/bindings/FolderDto';
import type { PassageDto } from '../lib/bindings/PassageDto';
import type { SearchHitDto } from '../lib/bindings/SearchHitDto';
import type { SourceDto } from '../lib/bindings/SourceDto';
import { fail, sleep } from './types';

type FolderCommand =
  | 'list_folders'
  | 'pick_folder'
  | 'add_folder'
  | 'remove_folder'
  | 'set_folder_paused'
  | 'set_folder_writable'
  | 'list_folder_files'
  | 'search_documents'
  | 'get_passage'
  | 'open_source_file';

export type FolderHandlers = {
  [K in FolderCommand]: (args: Commands[K]['args']) => Commands[K]['result'] | Promise<Commands[K]['result']>;
};

type Chunk = { id: number; heading: string | null; line_start: number; line_end: number; page: number | null; text: string };
type MockFile = {
  rel_path: string;
  status: 'indexed' | 'pending' | 'skipped' | 'failed';
  reason_code: string | null;
  message: string | null;
  size: number;
  modified: number;
  /** Its chunks once indexed. */
  chunks: Chunk[];
  /** Its chunks' text, cut when indexed. */
  content: Omit<Chunk, 'id'>[];
  embedded: boolean;
  /** The file was deleted on disk since (open_source_file refuses). */
  gone?: boolean;
};
type MockFolder = { id: number; path: string; paused: boolean; available: boolean; files: MockFile[]; last_indexed: number | null; pollingWhy?: string; pollEvery?: number; writable?: boolean };

export type OpenedFile = { path: string; reveal: boolean };

export type FoldersMock = {
  handlers: FolderHandlers;
  /** The top passages for a chat message (the retrieval the chat mock cites). */
  sourcesFor(question: string): SourceDto[];
  setDelay(ms: number): void;
  hold(): void;
  step(count?: number): void;
  release(): void;
  pickFolder(path: string | null): void;
  opened(): OpenedFile[];
  /** A passage's file is deleted on disk (the index has not noticed yet). */
  deleteOnDisk(relPath: string): void;
  /** The system refuses to watch the folder at `path` (`why`): it is polled; null: watched again. */
  setPolling(path: string, why: string | null, everySeconds?: number): void;
};

const NOW = Date.UTC(2026, 11, 1, 9, 30);
const HOUR = 3_600_000;

const md = (rel: string, chunks: [string | null, number, number, string][], ageHours: number): MockFile => ({
  rel_path: rel,
  status: 'indexed',
  reason_code: null,
  message: null,
  size: chunks.reduce((n, c) => n + c[3].length, 0),
  modified: NOW - ageHours * HOUR,
  chunks: [],
  content: chunks.map(([heading, line_start, line_end, text]) => ({ heading, line_start, line_end, page: null, text })),
  embedded: true,
});

function seededNotes(): MockFile[] {
  return [
    md(
      'home/printer.md',
      [
        ['Printer > Wi-Fi', 1, 6, 'The office printer is a Brother HL-L2350DW. Its Wi-Fi password is tea-kettle-42; it only joins the 2.4 GHz network.'],
        ['Printer > Toner', 8, 12, 'Toner cartridge TN-760. Order two at a time; the last one lasted about five months.'],
      ],
      30,
    ),
    md(
      'recipes/sourdough.md',
      [
        ['Sourdough > Starter', 1, 9, 'Feed the starter at 1:5:5 the night before. It is ready when it doubles and smells like yoghurt.'],
        ['Sourdough > Bake', 11, 20, 'Bake at 250 °C covered for 20 minutes, then uncovered at 230 °C for 25 minutes until deep brown.'],
      ],
      200,
    ),
    {
      rel_path: 'taxes/2025-return.pdf',
      status: 'indexed',
      reason_code: null,
      message: null,
      size: 184_320,
      modified: NOW - 900 * HOUR,
      chunks: [],
      content: [
        { heading: null, line_start: 1, line_end: 14, page: 1, text: 'Income tax return 2025. Filed on 14 March 2026; refund expected within eight weeks.' },
        { heading: null, line_start: 1, line_end: 22, page: 3, text: 'Deductions: home office 1,260, charitable donations 340, professional training 890.' },
      ],
      embedded: true,
    },
    md('trips/lisbon-2026.md', [['Lisbon > Hotel', 1, 5, 'Hotel Alfama Terrace, booking ref LX-20931, check-in 3 pm, breakfast included.']], 12),
    {
      rel_path: 'photos/scan-0001.tiff',
      status: 'skipped',
      reason_code: 'binary',
      message: 'not text (an image or other binary file)',
      size: 4_812_003,
      modified: NOW - 4000 * HOUR,
      chunks: [],
      content: [],
      embedded: false,
    },
    {
      rel_path: 'old/contract.docx',
      status: 'failed',
      reason_code: 'corrupt',
      message: 'the document is damaged: its zip archive ends early',
      size: 23_551,
      modified: NOW - 5000 * HOUR,
      chunks: [],
      content: [],
      embedded: false,
    },
  ];
}

/** What a newly added folder holds (the same for any path), pending at first. */
function newFolderFiles(): MockFile[] {
  const files: MockFile[] = [];
  for (let i = 1; i <= 12; i++) {
    files.push({
      ...md(`meeting-notes/2026-${String(i).padStart(2, '0')}.md`, [[`Meeting ${i}`, 1, 8, `Minutes of the monthly meeting number ${i}: budget review, garden committee and the boiler service.`]], i * 24),
      status: 'pending',
      embedded: false,
    });
  }
  return files;
}

const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
const STOP = new Set(['the', 'a', 'an', 'is', 'of', 'my', 'to', 'in', 'what', 'where', 'and', 'for', 'on', 'it', 'its', 'do', 'i', 'how']);

export function createFoldersMock(options: { seeded: boolean; emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void> }): FoldersMock {
  let nextFolderId = 1;
  let nextChunkId = 100;
  let delay = 90;
  let held = false;
  let permits = 0;
  const waiters: (() => void)[] = [];
  let picked: string | null = '/home/ada/Documents';
  const opened: OpenedFile[] = [];
  const folders: MockFolder[] = [];
  let indexing = false;

  const commit = (f: MockFile): void => {
    f.chunks = f.content.map((c) => ({ ...c, id: nextChunkId++ }));
    f.status = 'indexed';
  };

  if (options.seeded) {
    const files = seededNotes();
    for (const f of files) if (f.status === 'indexed') commit(f);
    folders.push({ id: nextFolderId++, path: '/home/ada/Notes', paused: false, available: true, files, last_indexed: Date.now() - 2 * HOUR });
  }

  const dto = (f: MockFolder): FolderDto => {
    const count = (s: MockFile['status']): number => f.files.filter((x) => x.status === s).length;
    const pending = count('pending');
    const chunks = f.files.reduce((n, x) => n + x.chunks.length, 0);
    return {
      id: f.id,
      path: f.path,
      name: f.path.split('/').filter(Boolean).pop() ?? f.path,
      // The app's watcher watches every folder it can.
      state: f.paused ? 'paused' : !f.available ? 'unavailable' : pending > 0 ? 'indexing' : f.pollingWhy !== undefined ? 'polling' : 'watching',
      indexed: count('indexed'),
      pending,
      skipped: count('skipped'),
      failed: count('failed'),
      chunks,
      chunks_embedded: f.files.reduce((n, x) => n + (x.embedded ? x.chunks.length : 0), 0),
      last_indexed: f.last_indexed,
      watch_reason: f.pollingWhy ?? null,
      writable: f.writable ?? false,
      poll_every_s: f.pollEvery ?? 30,
    };
  };

  const find = (path: string): MockFolder => folders.find((f) => f.path === path) ?? fail('not_found', `${path} is not a watched folder`);

  const allChunks = (): { folder: MockFolder; file: MockFile; chunk: Chunk }[] =>
    folders.flatMap((folder) => folder.files.flatMap((file) => file.chunks.map((chunk) => ({ folder, file, chunk }))));

  const place = (c: Chunk): string => (c.page !== null ? `page ${c.page}` : c.line_start === c.line_end ? `line ${c.line_start}` : `lines ${c.line_start}-${c.line_end}`);

  function search(query: string, folder: string | null, limit: number): SearchHitDto[] {
    const terms = words(query).filter((w) => !STOP.has(w));
    if (terms.length === 0) return [];
    return allChunks()
      .filter((x) => folder === null || x.folder.path === folder)
      .map((x) => {
        const have = new Set(words(`${x.chunk.heading ?? ''} ${x.chunk.text} ${x.file.rel_path}`));
        return { x, score: terms.filter((t) => have.has(t) || [...have].some((h) => h.startsWith(t) && t.length >= 4)).length };
      })
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.x.chunk.id - b.x.chunk.id)
      .slice(0, limit)
      .map(({ x }) => ({
        chunk_id: x.chunk.id,
        path: `${x.folder.path}/${x.file.rel_path}`,
        rel_path: x.file.rel_path,
        folder_name: x.folder.path.split('/').pop() ?? '',
        heading: x.chunk.heading,
        place: place(x.chunk),
        snippet: x.chunk.text,
      }));
  }

  const gate = async (): Promise<void> => {
    if (!held) {
      await sleep(delay);
      return;
    }
    if (permits > 0) {
      permits--;
      return;
    }
    await new Promise<void>((resolve) => waiters.push(resolve));
  };

  /** The ingest lane: one pending file of an unpaused folder at a time. */
  async function runQueue(): Promise<void> {
    if (indexing) return;
    indexing = true;
    try {
      const runnable = (): MockFile[] => folders.filter((f) => !f.paused && f.available).flatMap((f) => f.files.filter((x) => x.status === 'pending'));
      const total = runnable().length;
      let done = 0;
      await options.emit('index_progress', { done, total });
      for (;;) {
        const next = runnable()[0];
        if (!next) break;
        await gate();
        if (next.status !== 'pending') continue;
        const folder = folders.find((f) => f.files.includes(next));
        if (!folder || folder.paused) continue;
        commit(next);
        folder.last_indexed = Date.now();
        done++;
        await options.emit('index_progress', { done, total: Math.max(total, done + runnable().length) });
        await options.emit('store_changed', null);
      }
      // Vectors follow at the embedder's pace.
      for (const f of folders.flatMap((x) => x.files)) f.embedded = f.status === 'indexed';
      await options.emit('store_changed', null);
    } finally {
      indexing = false;
    }
  }

  const handlers: FolderHandlers = {
    list_folders: () => folders.map(dto),
    pick_folder: async () => {
      await sleep(30);
      return picked;
    },
    add_folder: ({ path }) => {
      const clean = path.trim().replace(/\/+$/, '');
      if (clean === '' || !clean.startsWith('/')) fail('invalid_input', `${path} is not an absolute path`);
      if (/missing|nowhere/.test(clean)) fail('invalid_input', `${clean} does not exist`);
      if (/\.[a-z0-9]{1,5}$/i.test(clean)) fail('invalid_input', `${clean} is a file, not a folder; add the folder it is in`);
      const same = folders.find((f) => f.path === clean);
      if (same) return { folder: dto(same), queued: 0, skipped: 0 };
      for (const f of folders) {
        if (clean.startsWith(`${f.path}/`)) fail('invalid_input', `${clean} is inside ${f.path}, which is already watched`);
        if (f.path.startsWith(`${clean}/`)) fail('invalid_input', `${clean} contains ${f.path}, which is already watched; remove it first`);
      }
      const folder: MockFolder = { id: nextFolderId++, path: clean, paused: false, available: true, files: newFolderFiles(), last_indexed: null };
      folders.push(folder);
      void runQueue();
      return { folder: dto(folder), queued: folder.files.length, skipped: 0 };
    },
    remove_folder: ({ path }) => {
      const folder = find(path);
      folders.splice(folders.indexOf(folder), 1);
      void options.emit('store_changed', null);
      return null;
    },
    set_folder_writable: ({ path, writable }) => {
      find(path).writable = writable;
      void options.emit('store_changed', null);
      return null;
    },
    set_folder_paused: ({ path, paused }) => {
      const targets = path === null ? folders : [find(path)];
      for (const f of targets) f.paused = paused;
      if (!paused) void runQueue();
      void options.emit('store_changed', null);
      return null;
    },
    list_folder_files: ({ path, status }) => {
      const folder = find(path);
      return folder.files
        .filter((f) => status === null || f.status === status)
        .map((f): FileDto => ({ rel_path: f.rel_path, status: f.status, reason_code: f.reason_code, message: f.message, size: f.size }))
        .sort((a, b) => a.rel_path.localeCompare(b.rel_path));
    },
    search_documents: async ({ query, folder, limit }) => {
      await sleep(40);
      if (folder !== null) find(folder);
      const embedded = allChunks().some((x) => x.file.embedded);
      return {
        mode: embedded ? 'hybrid' : 'bm25',
        warning: embedded || allChunks().length === 0 ? null : 'no chunk has a vector yet: these are keyword (bm25) results only',
        results: search(query, folder, limit ?? 10),
      };
    },
    get_passage: ({ chunkId }) => {
      const hit = allChunks().find((x) => x.chunk.id === chunkId);
      if (!hit) fail('not_found', 'this passage is no longer indexed: its file changed or is gone');
      const { folder, file, chunk } = hit as { folder: MockFolder; file: MockFile; chunk: Chunk };
      const passage: PassageDto = {
        chunk_id: chunk.id,
        path: `${folder.path}/${file.rel_path}`,
        rel_path: file.rel_path,
        folder: folder.path,
        heading: chunk.heading,
        place: place(chunk),
        line_start: chunk.line_start,
        line_end: chunk.line_end,
        page: chunk.page,
        text: chunk.text,
        modified: file.modified,
      };
      return passage;
    },
    open_source_file: ({ chunkId, reveal }) => {
      const hit = allChunks().find((x) => x.chunk.id === chunkId);
      if (!hit) fail('not_found', 'this passage is no longer indexed: its file changed or is gone');
      const path = `${hit?.folder.path}/${hit?.file.rel_path}`;
      if (hit?.file.gone) fail('not_found', `${path} is no longer there`);
      opened.push({ path, reveal });
      return null;
    },
  };

  return {
    handlers,
    sourcesFor: (question) =>
      search(question, null, 2).map((h, i) => ({
        position: i + 1,
        chunk_id: h.chunk_id,
        path: h.path,
        name: h.rel_path.split('/').pop() ?? h.rel_path,
        heading: h.heading,
        place: h.place,
      })),
    setDelay: (ms) => (delay = ms),
    hold: () => (held = true),
    step: (count = 1) => {
      for (let i = 0; i < count; i++) {
        const next = waiters.shift();
        if (next) next();
        else permits++;
      }
    },
    release: () => {
      held = false;
      permits = 0;
      while (waiters.length > 0) waiters.shift()?.();
    },
    pickFolder: (path) => (picked = path),
    opened: () => opened.map((o) => ({ ...o })),
    deleteOnDisk: (relPath) => {
      for (const f of folders.flatMap((x) => x.files)) if (f.rel_path === relPath) f.gone = true;
    },
    setPolling: (path, why, everySeconds) => {
      const folder = find(path);
      if (why === null) delete folder.pollingWhy;
      else folder.pollingWhy = why;
      if (everySeconds !== undefined) folder.pollEvery = everySeconds;
      void options.emit('store_changed', null);
    },
  };
}
