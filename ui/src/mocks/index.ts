/**
 * A fake core for browser tests and `npm run dev:mock`. Loaded only when
 * `import.meta.env.MODE === 'mock'` (dynamic import), so it never ships in `dist/`.
 * This file only wires the subsystems together; each keeps its own state:
 *
 *   ./settings.ts   status, the quick-prompt shortcut, window commands
 *   ./chat.ts       conversations and streamed turns
 *   ./providers.ts  providers, model slots, local servers, the model table
 *   ./memory.ts     long-term memory and Hearth's proposals (seed data in ./memory-seed.ts)
 *   ./embedding.ts  the search model: download and re-indexing
 *   ./folders.ts    watched folders, search over the user's files, an answer's sources
 *   ./consent.ts    the questions before a tool runs (the consent window answers them)
 *   ./mcp.ts        MCP servers on the Tools screen: add, import, approve, review a change
 *   ./builtin.ts    the built-in model: catalogue, downloads, Settings → Models
 *   ./updates.ts    updates and "Open at login" (`?updates=ask|offer|bad-signature|source`)
 *
 * The handler tables are typed from the generated bindings (./types.ts): adding, removing or
 * changing a command or a DTO in Rust (and regenerating the bindings) breaks `npm run check`.
 *
 * Test hooks on `window`:
 *   __ipcCalls  every command invoked, in order: { cmd, args }
 *   __hearthMock.emit(event, payload)  emit a core event
 *   __hearthMock.setStatus(patch)      change what get_status returns next
 *   __hearthMock.setChatDelay(ms)      time between streamed chat_token pieces (default 120)
 *   __hearthMock.setLocalServers(list) what detect_local_servers finds from now on
 *   __hearthMock.failNextTurn()        the next turn ends with chat_failed (CHAT_FAILURE)
 *   __hearthMock.setNextStopReason('cap'|'timeout')  the next turn with tool calls ends for that reason
 *   __hearthMock.setUndoDelay(ms)      how long the Memory screen offers Undo before deleting (default 10 s)
 *   __hearthMock.memories()            every stored memory (any status), a copy
 *   __hearthMock.proposals()           the pending memory proposals (as list_memory_proposals returns them)
 *   __hearthMock.addMemoryElsewhere(text, kind)  another process adds a memory (then store_changed)
 *   __hearthMock.setEmbeddingDelay(ms) time between download / re-embedding events (default 60)
 *   __hearthMock.holdEmbedding()       from now on each of those events waits for stepEmbedding()
 *   __hearthMock.stepEmbedding(n)      let the next n events through (while held)
 *   __hearthMock.releaseEmbedding()    stop holding: the rest run at the normal pace
 *   __hearthMock.failNextDownload()    the next download_embedding_model fails halfway (DOWNLOAD_FAILURE)
 *   __hearthMock.setEmbeddingElsewhere(kind, provider?, model?)  another process changes the search model
 *   __hearthMock.setFolderDelay(ms)    time between files indexed (default 90)
 *   __hearthMock.holdIndexing() / stepIndexing(n) / releaseIndexing()  index one file per step
 *   __hearthMock.pickFolder(path|null) what the OS folder picker answers next (null: cancelled)
 *   __hearthMock.openedFiles()         every open_source_file that opened a file: { path, reveal }
 *   __hearthMock.deleteOnDisk(relPath) a watched file is deleted on disk (not noticed yet)
 *   __hearthMock.setPolling(path, why|null, everySeconds?)  the system will not watch that folder: it is polled
 *   __hearthMock.askConsent(request)   a tool call waits for the user (then consent_changed); its id
 *   __hearthMock.withdrawConsent(id)   an open question times out unanswered (then consent_changed)
 *   __hearthMock.consentAnswers()      what the consent window answered, in order
 *   __hearthMock.tamperAudit()         the audit log's chain is broken at entry 2 (verify_audit says so)
 *   __hearthMock.setMcpStartDelay(ms)  how long list_mcp_tools takes to start a server (default 0)
 *   __hearthMock.addMcpServerElsewhere(name)  another process adds an MCP server (then store_changed)
 *   __hearthMock.setBuiltinDelay(ms)   time between built-in model download events (default 60)
 *   __hearthMock.holdBuiltin() / stepBuiltin(n) / releaseBuiltin()  one download event per step
 *   __hearthMock.failNextBuiltinDownload()  the next built-in download is refused halfway (hash mismatch)
 *   __hearthMock.pickModelFile(path|null)   what the OS file picker answers next (null: cancelled)
 *
 * Scenarios (./scenarios.ts): ok (two saved chats, two providers, memories), shortcut-taken,
 * startup-error, key-file, no-provider (nothing configured; Ollama is running), chat-fails,
 * markdown (ok plus a code answer and an answer carrying an XSS payload), fallback (the main
 * model fails and the fallback answers), env-provider (HEARTH_PROVIDER_URL overrides the
 * slots), memory-empty (ok without any memory), memory-near-budget (ok plus long pinned
 * memories that take more than 80% of the memory budget), memory-off (ok with memory off),
 * consent-diff / consent-escalated / consent-temporary (a question open in the consent window
 * at start: a destructive overwrite with a diff; an escalated write; a write in a temporary
 * chat), tool-calls (ok plus "Clear out old drafts", whose answers carry every tool outcome).
 * In any scenario with a model, a message containing "read my notes" runs two tool calls
 * (read_file, then a delete_file the user denies) before its answer (./tool-calls.ts).
 *
 * Built-in model (see ./builtin.ts): `?memory=GIB` is this computer's memory (default 16).
 *
 * Search model (see ./embedding.ts): `?embedding=missing|local|provider|off` sets the
 * embedding choice at start (default `missing`: local, not downloaded yet, keyword-only).
 */
import { clearMocks, mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { emit } from '@tauri-apps/api/event';
import type { Commands, Events } from '../lib/bindings/commands';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { MemoryDto } from '../lib/bindings/MemoryDto';
import type { MemoryProposalDto } from '../lib/bindings/MemoryProposalDto';
import type { StatusDto } from '../lib/bindings/StatusDto';
import { setUndoDelay } from '../main/memory/pending.svelte';
import { createBuiltinMock } from './builtin';
import { createChatMock } from './chat';
import { createConsentMock, type ConsentAnswer } from './consent';
import { createMcpMock } from './mcp';
import type { ConsentRequestDto } from '../lib/bindings/ConsentRequestDto';
import { createFoldersMock, type OpenedFile } from './folders';
import { createEmbeddingMock, embeddingStateFromLocation, type EmbeddingState } from './embedding';
import { createMemoryMock, type MemoryScenario } from './memory';
import { createProvidersMock, type LocalServer } from './providers';
import { seededScenario, type Scenario } from './scenarios';
import { createSettingsMock } from './settings';
import { createUpdatesMock, updatesStateFromLocation } from './updates';
import type { Handlers } from './types';

export { SCENARIOS, scenarioFromLocation, type Scenario } from './scenarios';
export type { Handlers } from './types';
export type { LocalServer } from './providers';

export type IpcCall = { cmd: string; args: unknown };

export type MockControl = {
  scenario: Scenario;
  /** What get_status returns now (a copy). */
  status(): StatusDto;
  emit<K extends keyof Events>(event: K, payload: Events[K]): Promise<void>;
  setStatus(patch: Partial<StatusDto>): void;
  setChatDelay(ms: number): void;
  setLocalServers(servers: LocalServer[]): void;
  failNextTurn(): void;
  setNextStopReason(reason: 'cap' | 'timeout'): void;
  setUndoDelay(ms: number): void;
  memories(): MemoryDto[];
  proposals(): MemoryProposalDto[];
  addMemoryElsewhere(text: string, kind: string): Promise<MemoryDto>;
  setEmbeddingDelay(ms: number): void;
  holdEmbedding(): void;
  stepEmbedding(count?: number): void;
  releaseEmbedding(): void;
  failNextDownload(): void;
  setEmbeddingElsewhere(kind: 'local' | 'off' | 'provider', provider?: string, model?: string): Promise<void>;
  setFolderDelay(ms: number): void;
  holdIndexing(): void;
  stepIndexing(count?: number): void;
  releaseIndexing(): void;
  pickFolder(path: string | null): void;
  openedFiles(): OpenedFile[];
  deleteOnDisk(relPath: string): void;
  setPolling(path: string, why: string | null, everySeconds?: number): void;
  askConsent(request: Omit<ConsentRequestDto, 'id'>): number;
  withdrawConsent(id: number): void;
  consentAnswers(): ConsentAnswer[];
  tamperAudit(): void;
  setMcpStartDelay(ms: number): void;
  addMcpServerElsewhere(name: string): void;
  setBuiltinDelay(ms: number): void;
  holdBuiltin(): void;
  stepBuiltin(count?: number): void;
  releaseBuiltin(): void;
  failNextBuiltinDownload(): void;
  pickModelFile(path: string | null): void;
};

declare global {
  interface Window {
    __ipcCalls?: IpcCall[];
    __hearthMock?: MockControl;
  }
}

function windowLabelFromLocation(): 'main' | 'quick' | 'consent' {
  if (/quick\.html$/.test(window.location.pathname)) return 'quick';
  if (/consent\.html$/.test(window.location.pathname)) return 'consent';
  return 'main';
}

export function installMocks(
  scenario: Scenario,
  windowLabel: 'main' | 'quick' | 'consent' = windowLabelFromLocation(),
  embeddingState: EmbeddingState = embeddingStateFromLocation(),
): MockControl {
  clearMocks();

  const send = <K extends keyof Events>(event: K, payload: Events[K]): Promise<void> => emit(event, payload);

  const settings = createSettingsMock({ scenario, emit: send });
  const memoryGib = Number(new URLSearchParams(window.location.search).get('memory') ?? '16') || 16;
  const builtin = createBuiltinMock({ emit: send, memoryGib });
  const providers = createProvidersMock({ scenario, delay: () => chat.delay(), builtin: () => builtin.main() });
  // Chat and memory need each other (an answer may teach; learning follows the chat's pace).
  const chat = createChatMock({ scenario, providers, memory: () => memory, folders: () => folders, emit: send });
  const folders = createFoldersMock({ seeded: scenario !== 'startup-error', emit: send });
  const seeded = seededScenario(scenario);
  const memoryScenario: MemoryScenario =
    scenario === 'memory-near-budget'
      ? 'near-budget'
      : scenario === 'memory-off'
        ? 'off'
        : seeded && scenario !== 'memory-empty'
          ? 'seeded'
          : 'empty';
  const memory = createMemoryMock({
    scenario: memoryScenario,
    learns: scenario === 'ok',
    emit: send,
    learnDelay: () => Math.min(chat.delay(), 150),
  });
  // Active memories, as the core's vector_counts counts them.
  const embedding = createEmbeddingMock({
    state: embeddingState,
    memories: () => memory.snapshot().filter((m) => m.status === 'active').length,
    providerExists: (name) => providers.exists(name),
    emit: send,
  });

  const consent = createConsentMock({ scenario, seeded, windowLabel, emit: send });
  const mcp = createMcpMock({ seeded, emit: send });
  const updates = createUpdatesMock(updatesStateFromLocation());

  const handlers: Handlers = {
    ...consent.handlers,
    ...mcp.handlers,
    ...settings.handlers,
    ...chat.handlers,
    ...providers.handlers,
    ...memory.handlers,
    ...embedding.handlers,
    ...folders.handlers,
    ...builtin.handlers,
    ...updates.handlers,
  };

  const calls: IpcCall[] = [];
  window.__ipcCalls = calls;

  mockWindows(windowLabel, windowLabel === 'main' ? 'quick' : 'main');
  mockIPC(
    (cmd, payload) => {
      calls.push({ cmd, args: payload ?? {} });
      if (!(cmd in handlers)) {
        const error: ErrorDto = { code: 'unknown_command', message: `The mock core has no command "${cmd}".` };
        return Promise.reject(error);
      }
      const handler = handlers[cmd as keyof Commands] as (args: unknown) => unknown;
      try {
        return Promise.resolve(handler(payload ?? {}));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    { shouldMockEvents: true },
  );

  const control: MockControl = {
    scenario,
    status: () => settings.status(),
    emit: send,
    setStatus: (patch) => settings.setStatus(patch),
    setChatDelay: (ms) => chat.setDelay(ms),
    setLocalServers: (servers) => providers.setLocalServers(servers),
    failNextTurn: () => chat.failNextTurn(),
    setNextStopReason: (reason) => chat.setNextStopReason(reason),
    setUndoDelay: (ms) => setUndoDelay(ms),
    memories: () => memory.snapshot(),
    proposals: () => memory.proposals(),
    addMemoryElsewhere: (text, kind) => memory.addElsewhere(text, kind),
    setEmbeddingDelay: (ms) => embedding.setDelay(ms),
    holdEmbedding: () => embedding.hold(),
    stepEmbedding: (count) => embedding.step(count),
    releaseEmbedding: () => embedding.release(),
    failNextDownload: () => embedding.failNextDownload(),
    setEmbeddingElsewhere: (kind, provider, model) => embedding.changeElsewhere(kind, provider, model),
    setFolderDelay: (ms) => folders.setDelay(ms),
    holdIndexing: () => folders.hold(),
    stepIndexing: (count) => folders.step(count),
    releaseIndexing: () => folders.release(),
    pickFolder: (path) => folders.pickFolder(path),
    openedFiles: () => folders.opened(),
    deleteOnDisk: (relPath) => folders.deleteOnDisk(relPath),
    setPolling: (path, why, everySeconds) => folders.setPolling(path, why, everySeconds),
    askConsent: (request) => consent.ask(request),
    withdrawConsent: (id) => consent.withdraw(id),
    consentAnswers: () => consent.answers(),
    tamperAudit: () => consent.tamperAudit(),
    setMcpStartDelay: (ms) => mcp.setStartDelay(ms),
    addMcpServerElsewhere: (name) => mcp.addElsewhere(name),
    setBuiltinDelay: (ms) => builtin.setDelay(ms),
    holdBuiltin: () => builtin.hold(),
    stepBuiltin: (count) => builtin.step(count),
    releaseBuiltin: () => builtin.release(),
    failNextBuiltinDownload: () => builtin.failNextDownload(),
    pickModelFile: (path) => builtin.pickModelFile(path),
  };
  window.__hearthMock = control;
  return control;
}
