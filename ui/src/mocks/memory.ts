/**
 * The mock core's long-term memory (seed data in ./memory-seed.ts): a stateful store with
 * the same rules as hearth-core's `memory` module and the shell's `memory_cmd.rs`:
 *
 * - lists are active (or, with `removed`, "Recently removed") memories, pinned first, then
 *   critical, then most recently updated; a query ranks by how many of its words a memory
 *   contains (a stand-in for the core's hybrid keyword + meaning search);
 * - every change is written to the memory's history; a user's delete is real: the memory
 *   goes, its history texts are blanked and a `delete` tombstone stays;
 * - import reads JSON Lines (`schema: "hearth.memory/1"`) and skips texts already known
 *   (normalized: lower-case, single spaces, no trailing punctuation); a bad line stops the
 *   import before anything is written, with `invalid_input` naming the line;
 * - after the second stored answer of a page session (scenario `ok` only, memory on and
 *   learning not paused) the assistant "learns": one add and one update, announced with a
 *   `memory_updated` event for that answer;
 * - Hearth never changes a pinned or critical memory itself: it proposes. The seeded data
 *   holds two pending proposals (an update of the critical allergy, a removal of the pinned
 *   units preference that suggests a replacement). Accepting an update changes the text;
 *   accepting a removal moves the memory to "Recently removed" (awaiting consent); either
 *   adds `new_memory` when set. Rejecting (or undoing a `proposal` change) drops it.
 */
import type { Commands, Events } from '../lib/bindings/commands';
import type { MemoryChangeDto } from '../lib/bindings/MemoryChangeDto';
import type { MemoryDto } from '../lib/bindings/MemoryDto';
import type { MemoryHistoryDto } from '../lib/bindings/MemoryHistoryDto';
import type { MemoryProposalDto } from '../lib/bindings/MemoryProposalDto';
import type { MemorySettingsDto } from '../lib/bindings/MemorySettingsDto';
import {
  MAX_MEMORY_TEXT,
  entry,
  memory,
  seed,
  seedProposals,
  source,
  type MemoryScenario,
  type StoredProposal,
} from './memory-seed';
import { fail } from './types';

export { MAX_MEMORY_TEXT, PROPOSED_ALLERGY_TEXT, PROPOSED_UNITS_MEMORY, type MemoryScenario } from './memory-seed';

/** The memory block's budget (tokens), as in hearth-core's context assembly. */
export const MEMORY_BUDGET = 1000;
/** Where the mock "writes" exports (the core uses the user's Downloads folder). */
export const EXPORT_DIR = '/home/alex/Downloads';
/** The `schema` of every exported JSON line. */
export const EXPORT_SCHEMA = 'hearth.memory/1';

/** What the assistant learns after the second answer (scenario `ok`). */
export const LEARNED_TEXT = 'Likes to plan one small step at a time';
export const UPDATED_BRIEF_TEXT = 'Keep answers short; use numbered steps for plans';

const KINDS = ['fact', 'preference', 'episode', 'instruction'] as const;

type MemoryCommand =
  | 'list_memories'
  | 'memory_counts'
  | 'get_memory'
  | 'add_memory'
  | 'edit_memory'
  | 'set_memory_pinned'
  | 'set_memory_critical'
  | 'delete_memories'
  | 'restore_memory'
  | 'empty_removed_memories'
  | 'forget_memories'
  | 'export_memories'
  | 'import_memories'
  | 'get_memory_settings'
  | 'set_memory_settings'
  | 'undo_memory_change'
  | 'list_memory_proposals'
  | 'accept_memory_proposal'
  | 'reject_memory_proposal'
  | 'count_conversation_memories';

export type MemoryHandlers = {
  [K in MemoryCommand]: (args: Commands[K]['args']) => Commands[K]['result'] | Promise<Commands[K]['result']>;
};

type Stored = MemoryDto;

export type MemoryMock = {
  handlers: MemoryHandlers;
  /** A stored answer finished (not stopped): may teach the assistant something. */
  afterAnswer(conversationId: string, messageId: number): void;
  /** delete_conversation with deleteMemories: the conversation's memories go for good. */
  forgetConversation(conversationId: string): number;
  /** A copy of every memory (any status), for tests. */
  snapshot(): MemoryDto[];
  /** A copy of the pending proposals, for tests. */
  proposals(): MemoryProposalDto[];
  /** Another process added a memory: stored, then `store_changed` is emitted. */
  addElsewhere(text: string, kind: string): Promise<MemoryDto>;
};

/** Lower-case, single-spaced, without trailing punctuation (the core's `normalize`). */
export function normalize(text: string): string {
  return text
    .split(/\s+/)
    .filter(Boolean)
    .join(' ')
    .toLowerCase()
    .replace(/[.!?;,]+$/, '');
}

const words = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** Roughly what the core's tokenizer counts for one rendered memory line, plus one. */
const tokensFor = (m: Stored): number => Math.ceil((m.text.length + (m.critical ? 12 : 2)) / 4) + 1;

export function createMemoryMock(options: {
  scenario: MemoryScenario;
  /** Only scenario `ok` learns after the second answer. */
  learns: boolean;
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
  /** How long after `chat_done` the `memory_updated` event comes. */
  learnDelay: () => number;
}): MemoryMock {
  const seeded = seed(Date.now(), options.scenario);
  let memories: Stored[] = seeded.memories;
  const history = seeded.history;
  let proposals: StoredProposal[] = seedProposals(Date.now(), options.scenario);
  let settings: MemorySettingsDto = { enabled: options.scenario !== 'off', extraction_paused: false };
  let nextId = 1;
  let answers = 0;

  const now = (): number => Date.now();
  const log = (id: string, item: MemoryHistoryDto): void => {
    const list = history.get(id) ?? [];
    list.push(item);
    history.set(id, list);
  };

  function find(id: string): Stored {
    const found = memories.find((m) => m.id === id);
    if (!found) fail('not_found', `there is no memory ${id}`);
    return found as Stored;
  }

  function checkText(text: string): string {
    const trimmed = text.trim();
    if (trimmed === '') fail('invalid_input', 'a memory cannot be empty');
    if ([...trimmed].length > MAX_MEMORY_TEXT) fail('invalid_input', `a memory is at most ${MAX_MEMORY_TEXT} characters`);
    return trimmed;
  }

  function checkKind(kind: string): string {
    const k = kind.trim().toLowerCase();
    if (!(KINDS as readonly string[]).includes(k)) fail('invalid_input', `unknown kind "${kind}": use fact, preference, episode or instruction`);
    return k;
  }

  function insert(fields: Partial<Stored> & Pick<Stored, 'text' | 'kind'>, actor: string): Stored {
    const at = now();
    const created = fields.created ?? at;
    const m = memory({ ...fields, id: `m-${(nextId++).toString(16).padStart(12, '0')}`, created, updated: at });
    memories.push(m);
    log(m.id, entry(actor === 'import' ? 'import' : 'add', actor, at, null, m.text));
    return m;
  }

  /** The user's (or forget's) delete: real, leaving a tombstone. */
  function purge(test: (m: Stored) => boolean): number {
    const victims = memories.filter(test);
    memories = memories.filter((m) => !test(m));
    proposals = proposals.filter((p) => !victims.some((m) => m.id === p.memory_id));
    for (const m of victims) {
      const list = (history.get(m.id) ?? []).map((h): MemoryHistoryDto => ({ ...h, old_text: null, new_text: null }));
      list.push(entry('delete', 'user', now()));
      history.set(m.id, list);
    }
    return victims.length;
  }

  function edit(id: string, text: string, actor: string): Stored {
    const clean = checkText(text);
    const m = find(id);
    if (m.status === 'superseded') fail('not_found', `there is no memory ${id}`);
    if (m.text !== clean) {
      log(id, entry('update', actor, now(), m.text, clean));
      m.text = clean;
      m.updated = now();
    }
    return structuredClone(m);
  }

  function restore(id: string): Stored {
    const m = find(id);
    if (m.status !== 'removed') fail('invalid_input', `memory ${id} was not removed`);
    m.status = 'active';
    m.removed_at = null;
    m.removal_awaits_consent = false;
    m.updated = now();
    log(id, entry('restore', 'user', now()));
    return structuredClone(m);
  }

  /** Hearth's removal: soft, to "Recently removed", waiting for the user's say. */
  function softRemove(id: string): void {
    const m = find(id);
    if (m.status !== 'active') fail('invalid_input', `memory ${id} is not active`);
    m.status = 'removed';
    m.removed_at = now();
    m.removal_awaits_consent = true;
    m.updated = now();
    log(id, entry('remove', 'assistant', now()));
  }

  function findProposal(id: string): StoredProposal {
    const found = proposals.find((p) => p.id === id);
    if (!found) fail('not_found', `there is no memory proposal ${id}`);
    return found as StoredProposal;
  }

  function rejectProposal(id: string): null {
    findProposal(id);
    proposals = proposals.filter((p) => p.id !== id);
    return null;
  }

  function acceptProposal(id: string): null {
    const p = findProposal(id);
    const target = find(p.memory_id);
    if (p.action === 'update') {
      if (p.proposed_text === null) fail('invalid_input', `proposal ${id} has no text`);
      edit(target.id, p.proposed_text as string, 'user');
    } else if (p.action === 'remove') {
      softRemove(target.id);
    } else {
      fail('invalid_input', `unknown proposal action "${p.action}"`);
    }
    if (p.new_memory !== null && !memories.some((m) => m.status === 'active' && normalize(m.text) === normalize(p.new_memory ?? ''))) {
      insert({ text: checkText(p.new_memory), kind: target.kind, source: source('conversation', p.conversation_id, p.message_id) }, 'assistant');
    }
    proposals = proposals.filter((other) => other.id !== id);
    return null;
  }

  function setFlag(id: string, flag: 'pinned' | 'critical', on: boolean): Stored {
    const m = find(id);
    if (m[flag] !== on) {
      m[flag] = on;
      m.updated = now();
      const op = flag === 'pinned' ? (on ? 'pin' : 'unpin') : on ? 'critical' : 'uncritical';
      log(id, entry(op, 'user', now()));
    }
    return structuredClone(m);
  }

  /** The core's order: pinned, then critical, then most recently updated. */
  const byImportance = (a: Stored, b: Stored): number =>
    Number(b.pinned) - Number(a.pinned) || Number(b.critical) - Number(a.critical) || b.updated - a.updated;

  const handlers: MemoryHandlers = {
    list_memories: ({ kind, query, removed, pinned, critical, source: from_source, from, to }) => {
      if (kind !== null) checkKind(kind);
      let list = memories.filter(
        (m) =>
          m.status === (removed ? 'removed' : 'active') &&
          (kind === null || m.kind === kind) &&
          (pinned === null || m.pinned === pinned) &&
          (critical === null || m.critical === critical) &&
          (from_source === null || m.source.kind === from_source) &&
          (from === null || m.created >= from) &&
          (to === null || m.created < to),
      );
      const q = query === null ? [] : words(query);
      if (q.length === 0) return structuredClone(list.sort(byImportance));
      const scored = list
        .map((m) => {
          const text = m.text.toLowerCase();
          return { m, score: q.filter((w) => text.includes(w)).length };
        })
        .filter((s) => s.score > 0)
        .sort((a, b) => b.score - a.score || b.m.updated - a.m.updated);
      list = scored.map((s) => s.m);
      return structuredClone(list);
    },
    memory_counts: () => {
      const active = memories.filter((m) => m.status === 'active');
      const count = (kind: string): number => active.filter((m) => m.kind === kind).length;
      return {
        fact: count('fact'),
        preference: count('preference'),
        episode: count('episode'),
        instruction: count('instruction'),
        removed: memories.filter((m) => m.status === 'removed').length,
        always_tokens: active.filter((m) => m.pinned || m.critical).reduce((sum, m) => sum + tokensFor(m), 0),
        budget: MEMORY_BUDGET,
        proposals: proposals.filter((p) => active.some((m) => m.id === p.memory_id)).length,
      };
    },
    get_memory: ({ id }) => {
      const memory = structuredClone(find(id));
      return {
        memory,
        history: structuredClone(history.get(id) ?? []),
        proposals: proposals
          .filter((p) => p.memory_id === id)
          .map((p) => ({ ...structuredClone(p), memory_text: memory.text })),
      };
    },
    add_memory: ({ text, kind, pinned, critical }) => {
      const m = insert({ text: checkText(text), kind: checkKind(kind), pinned, critical }, 'user');
      return structuredClone(m);
    },
    edit_memory: ({ id, text }) => edit(id, text, 'user'),
    set_memory_pinned: ({ id, pinned }) => setFlag(id, 'pinned', pinned),
    set_memory_critical: ({ id, critical }) => setFlag(id, 'critical', critical),
    delete_memories: ({ ids }) => purge((m) => ids.includes(m.id)),
    restore_memory: ({ id }) => restore(id),
    empty_removed_memories: () => purge((m) => m.status === 'removed'),
    forget_memories: ({ all, from, to }) => {
      if (all) return purge(() => true);
      if (from === null || to === null) return fail('invalid_input', 'say what to forget: everything, or a date range');
      if (from >= to) fail('invalid_input', 'the start must come before the end');
      return purge((m) => m.created >= from && m.created < (to as number));
    },
    export_memories: ({ format }) => {
      if (format !== 'jsonl' && format !== 'md') fail('invalid_input', `unknown format "${format}": use jsonl or md`);
      const date = new Date();
      const day = `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
      const count = memories.filter((m) => m.status === 'active' || (format === 'jsonl' && m.status === 'removed')).length;
      return { path: `${EXPORT_DIR}/hearth-memories-${day}.${format}`, count };
    },
    import_memories: ({ content }) => {
      type Item = { text: string; kind: string; line: Record<string, unknown> };
      const items: Item[] = [];
      content.split(/\r?\n/).forEach((raw, i) => {
        if (raw.trim() === '') return;
        let line: unknown;
        try {
          line = JSON.parse(raw);
        } catch (error) {
          fail('invalid_input', `line ${i + 1} is not a Hearth memory (${(error as Error).message})`);
        }
        const record = line as Record<string, unknown>;
        if (typeof line !== 'object' || line === null || typeof record.text !== 'string' || typeof record.kind !== 'string') {
          fail('invalid_input', `line ${i + 1} is not a Hearth memory (missing field \`text\` or \`kind\`)`);
        }
        if (record.schema !== EXPORT_SCHEMA) {
          fail('invalid_input', `line ${i + 1} has schema ${JSON.stringify(record.schema ?? null)}, not ${EXPORT_SCHEMA}`);
        }
        const text = record.text as string;
        if (text.trim() === '') fail('invalid_input', `line ${i + 1}: a memory cannot be empty`);
        if (!(KINDS as readonly string[]).includes(record.kind as string)) {
          fail('invalid_input', `line ${i + 1} is not a Hearth memory (unknown kind "${String(record.kind)}")`);
        }
        items.push({ text, kind: record.kind as string, line: record });
      });
      let added = 0;
      let skipped = 0;
      for (const item of items) {
        if (memories.some((m) => m.status !== 'superseded' && normalize(m.text) === normalize(item.text))) {
          skipped += 1;
          continue;
        }
        const line = item.line;
        const num = (value: unknown, fallback: number): number => (typeof value === 'number' ? value : fallback);
        const m = insert(
          {
            text: item.text.trim(),
            kind: item.kind,
            subject: typeof line.subject === 'string' ? line.subject : null,
            importance: num(line.importance, 0.5),
            pinned: line.pinned === true,
            critical: line.critical === true,
            confidence: num(line.confidence, 1),
            source: source('import'),
            created: num(line.created, now()),
          },
          'import',
        );
        const exported = Array.isArray(line.history) ? (line.history as MemoryHistoryDto[]) : [];
        const own = history.get(m.id) ?? [];
        history.set(m.id, [...exported.map((h) => ({ ...h })), ...own]);
        added += 1;
      }
      return { added, skipped };
    },
    get_memory_settings: () => ({ ...settings }),
    set_memory_settings: ({ enabled, extractionPaused }) => {
      settings = { enabled, extraction_paused: extractionPaused };
      return { ...settings };
    },
    undo_memory_change: ({ change }) => {
      switch (change.op) {
        case 'add':
          find(change.memory_id);
          purge((m) => m.id === change.memory_id);
          break;
        case 'update':
          if (change.old_text === null) fail('invalid_input', 'an update to undo needs its old text');
          edit(change.memory_id, change.old_text as string, 'user');
          break;
        case 'remove':
          restore(change.memory_id);
          break;
        case 'proposal':
          if (change.proposal_id === null) fail('invalid_input', 'a proposal to dismiss needs its id');
          rejectProposal(change.proposal_id as string);
          break;
        default:
          fail('invalid_input', `cannot undo "${change.op}"`);
      }
      return null;
    },
    list_memory_proposals: () =>
      [...proposals]
        .sort((a, b) => b.created - a.created)
        .flatMap((p): MemoryProposalDto[] => {
          const m = memories.find((x) => x.id === p.memory_id && x.status === 'active');
          return m ? [{ ...structuredClone(p), memory_text: m.text }] : [];
        }),
    accept_memory_proposal: ({ id }) => acceptProposal(id),
    reject_memory_proposal: ({ id }) => rejectProposal(id),
    count_conversation_memories: ({ conversationId }) =>
      memories.filter((m) => m.source.conversation_id === conversationId).length,
  };

  /** The assistant's reconciliation after an exchange: one new memory, one changed one. */
  async function learn(conversationId: string, messageId: number): Promise<void> {
    const changes: MemoryChangeDto[] = [];
    if (!memories.some((m) => normalize(m.text) === normalize(LEARNED_TEXT))) {
      const added = insert(
        { text: LEARNED_TEXT, kind: 'preference', importance: 0.5, confidence: 0.7, source: source('conversation', conversationId, messageId) },
        'assistant',
      );
      changes.push({ memory_id: added.id, op: 'add', text: added.text, old_text: null, proposal_id: null });
    }
    const brief = memories.find((m) => m.id === 'm-brief' && m.status === 'active');
    if (brief && brief.text !== UPDATED_BRIEF_TEXT) {
      const old = brief.text;
      edit(brief.id, UPDATED_BRIEF_TEXT, 'assistant');
      changes.push({ memory_id: brief.id, op: 'update', text: UPDATED_BRIEF_TEXT, old_text: old, proposal_id: null });
    }
    if (changes.length === 0) return;
    await options.emit('memory_updated', { conversation_id: conversationId, message_id: messageId, changes });
  }

  return {
    handlers,
    afterAnswer(conversationId, messageId) {
      answers += 1;
      if (!options.learns || answers !== 2 || !settings.enabled || settings.extraction_paused) return;
      setTimeout(() => void learn(conversationId, messageId), options.learnDelay());
    },
    forgetConversation: (conversationId) => purge((m) => m.source.conversation_id === conversationId),
    snapshot: () => structuredClone(memories),
    proposals: () => handlers.list_memory_proposals({}) as MemoryProposalDto[],
    async addElsewhere(text, kind) {
      const m = insert({ text: checkText(text), kind: checkKind(kind) }, 'user');
      await options.emit('store_changed', null);
      return structuredClone(m);
    },
  };
}
