/**
 * The mock memory's seed data: nine memories across the four kinds (one pinned, one critical;
 * from conversations, a file, the user and an import) and one "recently removed", each with
 * its history; two pending proposals on the protected ones; and, for scenario `near-budget`,
 * two long pinned memories that take most of the memory budget. Plus the constructors
 * (`memory`, `source`, `entry`) ./memory.ts uses for what it adds later.
 */
import type { MemoryDto } from '../lib/bindings/MemoryDto';
import type { MemoryHistoryDto } from '../lib/bindings/MemoryHistoryDto';
import type { MemoryProposalDto } from '../lib/bindings/MemoryProposalDto';
import type { MemorySourceDto } from '../lib/bindings/MemorySourceDto';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Longest memory text the core accepts. */
export const MAX_MEMORY_TEXT = 2000;

export type MemoryScenario = 'seeded' | 'empty' | 'near-budget' | 'off';

type Stored = MemoryDto;

export function source(kind: string, conversation: string | null = null, message: number | null = null, path: string | null = null): MemorySourceDto {
  return { kind, conversation_id: conversation, message_id: message, path };
}


export function memory(partial: Partial<Stored> & Pick<Stored, 'id' | 'text' | 'kind' | 'created'>): Stored {
  return {
    subject: null,
    importance: 0.5,
    pinned: false,
    critical: false,
    confidence: 1,
    source: source('manual'),
    event_at: null,
    updated: partial.created,
    last_used: null,
    use_count: 0,
    status: 'active',
    removed_at: null,
    removal_awaits_consent: false,
    context: null,
    facets: [],
    no_longer_true: false,
    superseded_by: null,
    ...partial,
  };
}


export const entry = (op: string, actor: string, at: number, old_text: string | null = null, new_text: string | null = null): MemoryHistoryDto => ({
  op,
  old_text,
  new_text,
  actor,
  at,
});


/** A long pinned text (scenario near-budget): about `chars` characters of house rules. */
function longRules(title: string, chars: number): string {
  const rules = [
    'Always give quantities in grams and millilitres, with cup measures in brackets only when asked.',
    'Mention when a step can be done the day before.',
    'Flag every ingredient that commonly contains peanuts or traces of them.',
    'Offer a vegetarian swap for any recipe that uses meat or fish.',
    'Keep shopping lists grouped by supermarket aisle.',
    'Prefer seasonal vegetables available in France.',
    'State the total time, including resting and marinating, at the top.',
  ];
  let text = `${title}:`;
  for (let i = 0; text.length < chars; i++) text += ` ${rules[i % rules.length]}`;
  return text.slice(0, Math.min(chars, MAX_MEMORY_TEXT));
}

/** A pending proposal as stored: the memory's current text is read when listing. */
export type StoredProposal = Omit<MemoryProposalDto, 'memory_text'>;

/** The seeded suggestions: Hearth may not change these protected memories on its own. */
export const PROPOSED_ALLERGY_TEXT = 'Allergic to peanuts and cashews';
export const PROPOSED_UNITS_MEMORY = 'Uses miles for running distances; metric for everything else';

export function seedProposals(now: number, scenario: MemoryScenario): StoredProposal[] {
  if (scenario === 'empty') return [];
  return [
    {
      id: 'p-allergy',
      memory_id: 'm-allergy',
      action: 'update',
      proposed_text: PROPOSED_ALLERGY_TEXT,
      new_memory: null,
      reason: 'You said cashews give you the same reaction as peanuts.',
      conversation_id: 'c-recipes',
      message_id: 1,
      created: now - 90 * MINUTE,
    },
    {
      id: 'p-metric',
      memory_id: 'm-metric',
      action: 'remove',
      proposed_text: null,
      new_memory: PROPOSED_UNITS_MEMORY,
      reason: 'You now log your runs in miles, so "metric units" no longer fits everything.',
      conversation_id: 'c-lisbon',
      message_id: 3,
      created: now - 25 * HOUR,
    },
  ];
}

export function seed(now: number, scenario: MemoryScenario): { memories: Stored[]; history: Map<string, MemoryHistoryDto[]> } {
  const history = new Map<string, MemoryHistoryDto[]>();
  if (scenario === 'empty') return { memories: [], history };
  const memories: Stored[] = [
    memory({
      id: 'm-home',
      facets: ['home'],
      text: 'Lives in Lyon, France',
      kind: 'fact',
      subject: 'home_city',
      importance: 0.8,
      confidence: 0.9,
      source: source('conversation', 'c-lisbon', 3),
      created: now - 20 * DAY,
      updated: now - 6 * DAY,
      last_used: now - 2 * DAY,
      use_count: 4,
    }),
    memory({
      id: 'm-allergy',
      facets: ['health'],
      text: 'Allergic to peanuts',
      kind: 'fact',
      subject: 'allergy',
      importance: 1,
      critical: true,
      created: now - 40 * DAY,
      updated: now - 40 * DAY + MINUTE,
      last_used: now - HOUR,
      use_count: 23,
    }),
    memory({
      id: 'm-metric',
      facets: ['style'],
      text: 'Prefers metric units (kilograms, Celsius, kilometres)',
      kind: 'preference',
      subject: 'units',
      importance: 0.6,
      pinned: true,
      created: now - 12 * DAY,
      updated: now - 12 * DAY + MINUTE,
      last_used: now - 3 * HOUR,
      use_count: 9,
    }),
    memory({
      id: 'm-veg',
      facets: ['health'],
      text: 'Eats vegetarian: no meat or fish',
      kind: 'preference',
      subject: 'diet',
      importance: 0.7,
      confidence: 0.8,
      source: source('conversation', 'c-recipes', 1),
      created: now - 2 * HOUR,
      updated: now - 2 * HOUR,
    }),
    memory({
      id: 'm-coffee',
      text: 'Takes coffee black, no sugar',
      kind: 'preference',
      subject: 'coffee',
      importance: 0.3,
      source: source('import'),
      context: 'Sam: How do you take your coffee?\nSam: Noted, black it is.',
      created: now - 60 * DAY,
      updated: now - 60 * DAY,
      last_used: now - 9 * DAY,
      use_count: 2,
    }),
    memory({
      id: 'm-lisbon',
      text: 'Planning a three-day trip to Lisbon',
      kind: 'episode',
      subject: 'trip',
      importance: 0.5,
      confidence: 0.85,
      source: source('conversation', 'c-lisbon', 3),
      created: now - 26 * HOUR,
      updated: now - 26 * HOUR,
      last_used: now - 25 * HOUR,
      use_count: 1,
    }),
    memory({
      id: 'm-race',
      text: 'Ran the Lyon half marathon in October 2024, in 1:52',
      kind: 'episode',
      subject: 'running',
      importance: 0.4,
      source: source('file', null, null, '/home/alex/Documents/journal/2024-10.md'),
      event_at: new Date(2024, 9, 20).getTime(),
      created: now - 90 * DAY,
      updated: now - 90 * DAY,
    }),
    memory({
      id: 'm-brief',
      text: 'Keep answers short and use bullet points',
      kind: 'instruction',
      importance: 0.9,
      created: now - 30 * DAY,
      updated: now - 30 * DAY,
      last_used: now - 2 * HOUR,
      use_count: 31,
    }),
    memory({
      id: 'm-quick',
      text: 'Suggest recipes that take under 30 minutes',
      kind: 'instruction',
      importance: 0.6,
      confidence: 0.75,
      source: source('conversation', 'c-recipes', 1),
      created: now - 2 * HOUR + MINUTE,
      updated: now - 2 * HOUR + MINUTE,
    }),
    memory({
      id: 'm-nurse',
      text: 'Works night shifts as a nurse',
      kind: 'fact',
      subject: 'job',
      importance: 0.5,
      confidence: 0.6,
      source: source('conversation', 'c-lisbon', 3),
      created: now - 25 * DAY,
      updated: now - 3 * DAY,
      status: 'removed',
      removed_at: now - 3 * DAY,
      removal_awaits_consent: true,
    }),
  ];
  history.set('m-home', [
    entry('add', 'assistant', now - 20 * DAY, null, 'Lives in Paris'),
    entry('update', 'assistant', now - 6 * DAY, 'Lives in Paris', 'Lives in Lyon, France'),
  ]);
  history.set('m-allergy', [
    entry('add', 'user', now - 40 * DAY, null, 'Allergic to peanuts'),
    entry('critical', 'user', now - 40 * DAY + MINUTE),
  ]);
  history.set('m-metric', [
    entry('add', 'user', now - 12 * DAY, null, 'Prefers metric units (kilograms, Celsius, kilometres)'),
    entry('pin', 'user', now - 12 * DAY + MINUTE),
  ]);
  history.set('m-veg', [entry('add', 'assistant', now - 2 * HOUR, null, 'Eats vegetarian: no meat or fish')]);
  history.set('m-coffee', [
    entry('add', 'user', now - 200 * DAY, null, 'Takes coffee black, no sugar'),
    entry('import', 'import', now - 60 * DAY, null, 'Takes coffee black, no sugar'),
  ]);
  history.set('m-lisbon', [entry('add', 'assistant', now - 26 * HOUR, null, 'Planning a three-day trip to Lisbon')]);
  history.set('m-race', [entry('add', 'assistant', now - 90 * DAY, null, 'Ran the Lyon half marathon in October 2024, in 1:52')]);
  history.set('m-brief', [entry('add', 'user', now - 30 * DAY, null, 'Keep answers short and use bullet points')]);
  history.set('m-quick', [entry('add', 'assistant', now - 2 * HOUR + MINUTE, null, 'Suggest recipes that take under 30 minutes')]);
  history.set('m-nurse', [
    entry('add', 'assistant', now - 25 * DAY, null, 'Works night shifts as a nurse'),
    entry('remove', 'assistant', now - 3 * DAY),
  ]);
  if (scenario === 'near-budget') {
    const rules = [
      memory({
        id: 'm-rules-cooking',
        text: longRules('House rules for recipes', 1900),
        kind: 'instruction',
        pinned: true,
        importance: 0.9,
        created: now - 5 * DAY,
        updated: now - 5 * DAY,
        use_count: 12,
        last_used: now - DAY,
      }),
      memory({
        id: 'm-rules-plans',
        text: longRules('House rules for meal plans', 1500),
        kind: 'instruction',
        pinned: true,
        importance: 0.9,
        created: now - 4 * DAY,
        updated: now - 4 * DAY,
      }),
    ];
    for (const rule of rules) {
      memories.push(rule);
      history.set(rule.id, [entry('add', 'user', rule.created, null, rule.text), entry('pin', 'user', rule.created + MINUTE)]);
    }
  }
  return { memories, history };
}

