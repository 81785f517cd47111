/**
 * The state of the Memory screen (../screens/Memory.svelte) and what it does: loading the
 * settings, counts, list, proposals and the open memory; the filters and the two views
 * (the memories, "Recently removed"); the selection; the changes (edit, pin, critical,
 * delete with Undo, restore, accept / reject a proposal, empty, add, import, forget) and
 * where focus goes after each.
 *
 * One instance per mounted screen: construct it while the component initialises (its
 * effects belong to the component) and call `start()` from `onMount` (it returns the
 * cleanup, which also commits the deletes still waiting for their Undo).
 */
import { tick, untrack } from 'svelte';
import { SvelteSet } from 'svelte/reactivity';
import type { ImportResultDto } from '../../lib/bindings/ImportResultDto';
import type { MemoryCountsDto } from '../../lib/bindings/MemoryCountsDto';
import type { MemoryDetailDto } from '../../lib/bindings/MemoryDetailDto';
import type { MemoryDto } from '../../lib/bindings/MemoryDto';
import type { MemoryProposalDto } from '../../lib/bindings/MemoryProposalDto';
import type { MemorySettingsDto } from '../../lib/bindings/MemorySettingsDto';
import { call, subscribe, toErrorDto, type Commands, type ErrorDto } from '../../lib/ipc';
import { notify } from '../../lib/toast.svelte';
import { requestOpen } from '../chat/open.svelte';
import { hrefFor } from '../routes';
import {
  KINDS,
  activeTotal,
  dayAfter,
  dayStart,
  excerpt,
  formatNumber,
  plural,
  sentence,
  type Kind,
  type SourceKind,
} from './format';
import type { MenuAction } from './MemoryHeader.svelte';
import { focusNear, focusRow, rowIndex } from './list-focus';
import { flushDeletes, hiddenMemories, onSettled, scheduleDelete, undoDelete } from './pending.svelte';

type ListArgs = Commands['list_memories']['args'];

export type MemoryView = 'active' | 'removed';

/** The id of the detail panel's heading (focus goes there when it opens). */
export const DETAIL_HEADING = 'memory-detail-title';

/** A lookup built afresh on each read (never changed afterwards, so a plain Set). */
function idsOf(list: readonly { id: string }[]): ReadonlySet<string> {
  return new Set(list.map((m) => m.id));
}

/** Conversation titles by id, built afresh on each read (never changed afterwards). */
function titlesById(list: readonly { id: string; title: string }[]): ReadonlyMap<string, string> {
  return new Map(list.map((c) => [c.id, c.title]));
}

export class MemoryScreen {
  settings = $state<MemorySettingsDto | null>(null);
  settingsError = $state<ErrorDto | null>(null);
  counts = $state<MemoryCountsDto | null>(null);
  countsError = $state<ErrorDto | null>(null);
  memories = $state<MemoryDto[]>([]);
  listLoaded = $state(false);
  listError = $state<ErrorDto | null>(null);
  proposals = $state<MemoryProposalDto[]>([]);
  proposalsError = $state<ErrorDto | null>(null);
  /** Proposals whose Accept / Reject is on its way to the core. */
  readonly deciding = new SvelteSet<string>();
  /** Conversation titles by id; null until known (provenance then shows the id). */
  titles = $state<ReadonlyMap<string, string> | null>(null);
  /** Whether the database is encrypted (null: unknown, then the empty state doesn't claim it). */
  encrypted = $state<boolean | null>(null);

  view = $state<MemoryView>('active');
  query = $state('');
  appliedQuery = $state('');
  kind = $state<'' | Kind>('');
  source = $state<'' | SourceKind>('');
  pinnedOnly = $state(false);
  criticalOnly = $state(false);
  fromDay = $state('');
  toDay = $state('');

  readonly selected = new SvelteSet<string>();
  detailId = $state<string | null>(null);
  detail = $state<MemoryDetailDto | null>(null);
  detailError = $state<ErrorDto | null>(null);
  editingId = $state<string | null>(null);
  editingDetail = $state(false);
  adding = $state(false);
  dialog = $state<MenuAction | null>(null);
  confirmingEmpty = $state(false);
  emptying = $state(false);
  now = $state(Date.now());

  addButton: HTMLButtonElement | undefined = $state();
  moreButton: HTMLButtonElement | undefined = $state();
  searchInput: HTMLInputElement | undefined = $state();
  listRoot: HTMLElement | undefined = $state();
  private listSeq = 0;
  private detailSeq = 0;
  // Counts read for an earlier change may arrive after newer ones (the first read also
  // warms the tokenizer): only the latest request's answer is shown.
  private countsSeq = 0;
  private proposalsSeq = 0;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;

  readonly hidden = $derived(idsOf(hiddenMemories()));
  readonly visible = $derived(this.memories.filter((m) => !this.hidden.has(m.id)));
  readonly pendingProposals = $derived(this.proposals.filter((p) => !this.hidden.has(p.memory_id)));
  readonly detailProposal = $derived(
    this.detailId === null ? null : (this.pendingProposals.find((p) => p.memory_id === this.detailId) ?? null),
  );

  /** The core's counts, minus what waits to be deleted. */
  readonly shown = $derived.by(() => {
    if (!this.counts) return null;
    const next = { ...this.counts };
    for (const m of hiddenMemories()) if (m.kind in next && next[m.kind as Kind] > 0) next[m.kind as Kind] -= 1;
    return next;
  });
  readonly total = $derived(this.shown ? activeTotal(this.shown) : 0);
  readonly isEmpty = $derived(
    this.shown !== null && this.total === 0 && this.shown.removed === 0 && hiddenMemories().length === 0,
  );
  readonly dateError = $derived.by(() => {
    const from = dayStart(this.fromDay);
    const to = dayAfter(this.toDay);
    return from !== null && to !== null && from >= to ? 'The first day is after the last.' : null;
  });
  readonly filtering = $derived(
    this.kind !== '' || this.source !== '' || this.pinnedOnly || this.criticalOnly || this.fromDay !== '' ||
      this.toDay !== '' || this.appliedQuery.trim() !== '',
  );
  readonly searching = $derived(this.appliedQuery.trim() !== '');

  readonly listArgs = $derived<ListArgs>({
    kind: this.kind === '' ? null : this.kind,
    query: this.appliedQuery.trim() === '' ? null : this.appliedQuery.trim(),
    removed: this.view === 'removed',
    pinned: this.pinnedOnly ? true : null,
    critical: this.criticalOnly ? true : null,
    source: this.source === '' ? null : this.source,
    from: dayStart(this.fromDay),
    to: dayAfter(this.toDay),
  });

  readonly groups = $derived(
    KINDS.map((k) => ({ kind: k, items: this.visible.filter((m) => m.kind === k) })).filter((g) => g.items.length > 0),
  );
  readonly selectedVisible = $derived(this.view === 'active' ? this.visible.filter((m) => this.selected.has(m.id)) : []);
  readonly summary = $derived.by(() => {
    if (!this.listLoaded || !this.filtering) return '';
    const count = this.visible.length;
    if (this.view === 'removed') return `${plural(count, 'removed memory matches', 'removed memories match')}.`;
    if (this.searching) {
      return count === 0 ? `Nothing matches “${this.appliedQuery.trim()}”.` : `${plural(count, 'match', 'matches')}, best first.`;
    }
    return `${formatNumber(count)} of ${plural(this.total, 'memory', 'memories')} shown.`;
  });

  constructor() {
    // The list follows the filters (the query a moment after typing stops).
    $effect(() => {
      const args = $state.snapshot(this.listArgs);
      untrack(() => void this.loadList(args));
    });

    $effect(() => {
      const typed = this.query;
      const timer = setTimeout(() => (this.appliedQuery = typed), 150);
      return () => clearTimeout(timer);
    });
  }

  /** First reads, the clock and the core's events; returns what to do when the screen closes. */
  start(): () => void {
    void this.loadSettings();
    void this.loadCounts();
    void this.loadProposals();
    void this.loadTitles();
    void this.loadStatus();
    const clock = setInterval(() => (this.now = Date.now()), 60_000);
    const stops = [
      subscribe('store_changed', () => this.refreshSoon()),
      subscribe('memory_updated', () => this.refreshSoon()),
      // A batch the core deleted: read again before the rows stop being hidden.
      onSettled(async () => {
        await this.refresh();
      }),
    ];
    return () => {
      // Leaving the screen: what waits for its Undo is deleted now.
      flushDeletes();
      clearInterval(clock);
      clearTimeout(this.refreshTimer);
      stops.forEach((stop) => stop());
    };
  }

  // ---- Loading ----

  private async loadSettings(): Promise<void> {
    try {
      this.settings = await call('get_memory_settings');
      this.settingsError = null;
    } catch (reason) {
      this.settingsError = toErrorDto(reason);
    }
  }

  private async loadCounts(): Promise<void> {
    const mine = ++this.countsSeq;
    try {
      const fresh = await call('memory_counts');
      if (mine !== this.countsSeq) return;
      this.counts = fresh;
      this.countsError = null;
    } catch (reason) {
      if (mine === this.countsSeq) this.countsError = toErrorDto(reason);
    }
  }

  async loadList(args: ListArgs = $state.snapshot(this.listArgs)): Promise<void> {
    const mine = ++this.listSeq;
    try {
      const list = await call('list_memories', args);
      if (mine !== this.listSeq) return;
      this.memories = list;
      this.listError = null;
      this.listLoaded = true;
      // Selection only covers what is listed.
      for (const id of [...this.selected]) if (!list.some((m) => m.id === id)) this.selected.delete(id);
    } catch (reason) {
      if (mine === this.listSeq) this.listError = toErrorDto(reason);
    }
  }

  private async loadProposals(): Promise<void> {
    const mine = ++this.proposalsSeq;
    try {
      const fresh = await call('list_memory_proposals');
      if (mine !== this.proposalsSeq) return;
      this.proposals = fresh;
      this.proposalsError = null;
    } catch (reason) {
      if (mine === this.proposalsSeq) this.proposalsError = toErrorDto(reason);
    }
  }

  private async loadTitles(): Promise<void> {
    try {
      const list = await call('list_conversations');
      this.titles = titlesById(list);
    } catch {
      this.titles = null;
    }
  }

  private async loadStatus(): Promise<void> {
    try {
      this.encrypted = (await call('get_status')).encrypted;
    } catch {
      this.encrypted = null;
    }
  }

  private async loadDetail(id: string): Promise<void> {
    const mine = ++this.detailSeq;
    try {
      const found = await call('get_memory', { id });
      if (mine !== this.detailSeq || this.detailId !== id) return;
      this.detail = found;
      this.detailError = null;
    } catch (reason) {
      if (mine === this.detailSeq && this.detailId === id) this.detailError = toErrorDto(reason);
    }
  }

  /** After a change: the list, the counts, the proposals and the open memory, read again. */
  private async refresh(): Promise<void> {
    this.now = Date.now();
    await Promise.all([
      this.loadList(),
      this.loadCounts(),
      this.loadProposals(),
      this.detailId !== null ? this.loadDetail(this.detailId) : Promise.resolve(),
    ]);
  }

  private refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      void this.refresh();
      void this.loadTitles();
      void this.loadSettings();
    }, 250);
  }

  // ---- Focus (./list-focus.ts) ----

  focusRow(id: string, part: 'open' | 'pin' = 'open'): Promise<void> {
    return focusRow(() => this.listRoot, id, part);
  }

  /** Focus what now sits where `index` was (or the last memory, or the search box). */
  private focusNear(index: number): Promise<void> {
    return focusNear(() => this.listRoot, index, () => this.searchInput);
  }

  private async focusDetailHeading(): Promise<void> {
    await tick();
    document.getElementById(DETAIL_HEADING)?.focus();
  }

  // ---- Detail ----

  async openDetail(id: string): Promise<void> {
    if (this.detailId !== id) {
      this.detailId = id;
      this.detail = null;
      this.detailError = null;
      this.editingDetail = false;
      void this.loadDetail(id);
    }
    await this.focusDetailHeading();
  }

  async closeDetail(refocus = true): Promise<void> {
    const id = this.detailId;
    this.detailId = null;
    this.detail = null;
    this.detailError = null;
    this.editingDetail = false;
    if (refocus && id !== null) await this.focusRow(id);
  }

  /** The detail panel's editor closed without saving: focus goes back to its heading. */
  async endDetailEdit(): Promise<void> {
    this.editingDetail = false;
    await this.focusDetailHeading();
  }

  /** A row's editor closed without saving: focus goes back to the row. */
  endRowEdit(id: string): void {
    this.editingId = null;
    void this.focusRow(id);
  }

  readonly conversationTitle = (id: string): string | null | undefined => {
    if (this.titles === null) return undefined;
    return this.titles.get(id) ?? null;
  };

  readonly openSource = (conversationId: string, messageId: number | null): void => {
    requestOpen(conversationId, messageId);
    location.hash = hrefFor('chat');
  };

  // ---- Changes ----

  private async saveText(memory: MemoryDto, text: string): Promise<string | null> {
    try {
      const saved = await call('edit_memory', { id: memory.id, text });
      this.memories = this.memories.map((m) => (m.id === saved.id ? saved : m));
      this.editingId = null;
      this.editingDetail = false;
      notify('Memory saved.');
      void this.refresh();
      return null;
    } catch (reason) {
      return sentence(toErrorDto(reason).message);
    }
  }

  async saveRow(memory: MemoryDto, text: string): Promise<string | null> {
    const refused = await this.saveText(memory, text);
    if (refused === null) void this.focusRow(memory.id);
    return refused;
  }

  async saveDetail(memory: MemoryDto, text: string): Promise<string | null> {
    const refused = await this.saveText(memory, text);
    if (refused === null) await this.focusDetailHeading();
    return refused;
  }

  async togglePin(memory: MemoryDto, from: 'row' | 'detail'): Promise<void> {
    try {
      const pinned = !memory.pinned;
      await call('set_memory_pinned', { id: memory.id, pinned });
      notify(pinned ? 'Pinned: always in the prompt.' : 'Unpinned.');
      await this.refresh();
      if (from === 'row') void this.focusRow(memory.id, 'pin');
    } catch (reason) {
      notify(`Couldn't change the pin: ${toErrorDto(reason).message}`, 'error', 6000);
    }
  }

  async toggleCritical(memory: MemoryDto): Promise<void> {
    try {
      const critical = !memory.critical;
      await call('set_memory_critical', { id: memory.id, critical });
      notify(critical ? 'Marked critical: always in the prompt, first.' : 'No longer critical.');
      await this.refresh();
    } catch (reason) {
      notify(`Couldn't change it: ${toErrorDto(reason).message}`, 'error', 6000);
    }
  }

  async remove(list: MemoryDto[]): Promise<void> {
    if (list.length === 0) return;
    const index = Math.min(...list.map((m) => rowIndex(this.listRoot, m.id)).filter((i) => i >= 0));
    const ids = list.map((m) => m.id);
    scheduleDelete(list.map((m) => ({ id: m.id, kind: m.kind })));
    for (const id of ids) this.selected.delete(id);
    if (this.editingId !== null && ids.includes(this.editingId)) this.editingId = null;
    if (this.detailId !== null && ids.includes(this.detailId)) await this.closeDetail(false);
    await this.focusNear(Number.isFinite(index) ? index : 0);
  }

  readonly undo = async (): Promise<void> => {
    const back = undoDelete();
    const first = back[0];
    if (first) await this.focusRow(first.id);
  };

  async restore(memory: MemoryDto): Promise<void> {
    const index = rowIndex(this.listRoot, memory.id);
    try {
      await call('restore_memory', { id: memory.id });
      notify(`Restored “${excerpt(memory.text, 40)}”.`);
      if (this.detailId === memory.id) await this.closeDetail(false);
      await this.refresh();
      await this.focusNear(index);
    } catch (reason) {
      notify(`Couldn't restore it: ${toErrorDto(reason).message}`, 'error', 6000);
    }
  }

  /** Accept or reject one of Hearth's proposals, then read everything again. */
  async decide(proposal: MemoryProposalDto, accept: boolean, from: 'banner' | 'detail'): Promise<void> {
    if (this.deciding.has(proposal.id)) return;
    this.deciding.add(proposal.id);
    const index = this.pendingProposals.findIndex((p) => p.id === proposal.id);
    try {
      await call(accept ? 'accept_memory_proposal' : 'reject_memory_proposal', { id: proposal.id });
      const what = excerpt(proposal.memory_text, 40);
      if (!accept) notify(`Kept “${what}” as it is.`);
      else notify(proposal.action === 'remove' ? `Removed “${what}”: it is in Recently removed.` : `Changed “${what}”.`);
      if (accept && proposal.action === 'remove' && this.detailId === proposal.memory_id) await this.closeDetail(false);
      await this.refresh();
      await tick();
      if (from === 'detail' && this.detailId !== null) {
        document.getElementById(DETAIL_HEADING)?.focus();
        return;
      }
      // Focus moves to the next suggestion, or to the screen's heading when none is left.
      const buttons = [...document.querySelectorAll<HTMLButtonElement>('[data-testid="proposals"] [data-decision="accept"]')];
      const next = buttons[Math.min(Math.max(index, 0), buttons.length - 1)];
      if (next) next.focus();
      else document.getElementById('screen-title')?.focus();
    } catch (reason) {
      notify(`Couldn't ${accept ? 'accept' : 'reject'} the suggestion: ${toErrorDto(reason).message}`, 'error', 6000);
    } finally {
      this.deciding.delete(proposal.id);
    }
  }

  // ---- Recently removed ----

  readonly emptyRemoved = async (): Promise<void> => {
    if (this.emptying) return;
    this.emptying = true;
    try {
      const count = await call('empty_removed_memories');
      notify(count === 0 ? 'Nothing to empty.' : `${plural(count, 'memory', 'memories')} deleted for good.`);
      this.confirmingEmpty = false;
      if (this.detailId !== null) await this.closeDetail(false);
      await this.refresh();
      await tick();
      document.getElementById('tab-removed')?.focus();
    } catch (reason) {
      notify(`Couldn't empty it: ${toErrorDto(reason).message}`, 'error', 6000);
    } finally {
      this.emptying = false;
    }
  };

  readonly askEmpty = async (): Promise<void> => {
    this.confirmingEmpty = true;
    await tick();
    document.querySelector<HTMLButtonElement>('[data-confirm="empty"] .cancel')?.focus();
  };

  readonly cancelEmpty = async (): Promise<void> => {
    this.confirmingEmpty = false;
    await tick();
    document.querySelector<HTMLButtonElement>('[data-action="empty"]')?.focus();
  };

  // ---- Header actions ----

  readonly toggleAdd = async (): Promise<void> => {
    this.adding = !this.adding;
    if (!this.adding) {
      await tick();
      this.addButton?.focus();
    }
  };

  readonly onAdded = async (memory: MemoryDto): Promise<void> => {
    this.adding = false;
    notify('Memory added.');
    if (this.view !== 'active') this.view = 'active';
    await this.refresh();
    if (this.visible.some((m) => m.id === memory.id)) await this.focusRow(memory.id);
    else this.addButton?.focus();
  };

  readonly cancelAdd = async (): Promise<void> => {
    this.adding = false;
    await tick();
    this.addButton?.focus();
  };

  readonly onMenu = (action: MenuAction): void => {
    this.dialog = action;
  };

  readonly closeDialog = (): void => {
    this.dialog = null;
  };

  readonly onImported = (result: ImportResultDto): void => {
    if (result.added > 0) void this.refresh();
  };

  readonly onForgot = async (count: number): Promise<void> => {
    this.dialog = null;
    notify(count === 0 ? 'There was nothing to forget.' : `${plural(count, 'memory', 'memories')} forgotten for good.`);
    this.selected.clear();
    if (this.detailId !== null) await this.closeDetail(false);
    await this.refresh();
  };

  // ---- Views, filters and selection ----

  readonly switchView = async (next: MemoryView, focusTab = false): Promise<void> => {
    if (this.view !== next) {
      this.view = next;
      this.selected.clear();
      this.editingId = null;
      this.confirmingEmpty = false;
      if (this.detailId !== null) await this.closeDetail(false);
      this.listLoaded = false;
    }
    if (focusTab) {
      await tick();
      document.getElementById(`tab-${next}`)?.focus();
    }
  };

  readonly clearFilters = (): void => {
    this.query = '';
    this.appliedQuery = '';
    this.kind = '';
    this.source = '';
    this.pinnedOnly = false;
    this.criticalOnly = false;
    this.fromDay = '';
    this.toDay = '';
    this.searchInput?.focus();
  };

  readonly toggleSelectAll = (): void => {
    if (this.selectedVisible.length === this.visible.length) this.selected.clear();
    else for (const m of this.visible) this.selected.add(m.id);
  };
}
