/**
 * The mock core's chat: two seeded conversations (four with scenario `markdown`: a code
 * answer and one carrying an XSS payload). `send_message` answers with MOCK_ANSWER_PIECES (or
 * CODE_ANSWER_PIECES, Markdown with a fenced code block, when the question is about code),
 * emitted as a few `chat_token` pieces and then `chat_done` with the turn's model, tokens,
 * cost and context zones (asynchronously, after the command returned its turn id);
 * `stop_turn` ends the stream early with `stopped: true`. `regenerate` drops the last answer
 * and streams REGENERATED_ANSWER_PIECES; `edit_last_message` replaces the last user message
 * and everything after it, then answers the new text. The quick prompt sends with
 * `conversationId: null`, so each question starts a new conversation. `open_in_main` emits
 * `open_conversation`. Scenario `chat-fails` fails every turn, `fallback` answers with the
 * fallback model, `cascade` has a fast model's answer cut off and improved by the main model
 * (`chat_escalating`, then the main model's pieces). After a stored answer, memory may learn (./memory.ts `afterAnswer`).
 *
 * Tools (./tool-calls.ts): a question containing "read my notes" runs NOTES_SCRIPT before its
 * answer: each call is announced (`chat_tool_started`), waits one delay (the gate, the
 * consent window, the run) and ends (`chat_tool`); a stop ends the running call as
 * `cancelled`. Its calls go with `chat_done` and are stored with the answer (`get_messages`).
 * `setNextStopReason('cap' | 'timeout')` makes the next tool turn end for that reason.
 * Scenario `tool-calls` adds a seeded conversation whose answers carry every outcome.
 */
import type { FoldersMock } from './folders';
import type { Events } from '../lib/bindings/commands';
import type { ConversationDto } from '../lib/bindings/ConversationDto';
import type { ErrorDto } from '../lib/bindings/ErrorDto';
import type { MessageDto } from '../lib/bindings/MessageDto';
import type { SlotDto } from '../lib/bindings/SlotDto';
import type { ToolCallDto } from '../lib/bindings/ToolCallDto';
import type { TurnInfoDto } from '../lib/bindings/TurnInfoDto';
import type { ZonesDto } from '../lib/bindings/ZonesDto';
import type { MemoryMock } from './memory';
import type { ProvidersMock } from './providers';
import type { Scenario } from './scenarios';
import {
  DRAFTS_CALLS,
  NOTES_ANSWER_PIECES,
  NOTES_QUESTION,
  NOTES_SCRIPT,
  TODO_CALLS,
  TODO_LEFT_OUT,
  TODO_ZONES,
  TOOLS_ZONE,
} from './tool-calls';
import { fail, sleep, type HandlersFor } from './types';

/** Scenario `over-budget`: a message sent without "anyway" is held back by the daily cap. */
export const OVER_BUDGET_FAILURE: ErrorDto = {
  code: 'over_budget',
  message:
    'This message was not sent: it would cross your daily budget ($4.98 of $5.00 spent; it may cost up to $0.0370). Send this message anyway, switch to a local model, or raise the cap.',
};

export const CHAT_FAILURE: ErrorDto = {
  code: 'provider_auth',
  message: 'TestProvider rejected the request (401): check your API key for TestProvider',
};

/** What the mock model answers, streamed in these pieces. */
export const MOCK_ANSWER_PIECES = [
  'Good question. ',
  'Here is a short plan:\n',
  '1. Start with what you already know.\n',
  '2. Take the next step ',
  'and check how it went.',
];

/** The answer to a question about code: Markdown with a heading, a list and a fenced block. */
export const CODE_ANSWER_PIECES = [
  '## Sorting by a key\n\n',
  'Use `sorted` with a `key` function:\n\n',
  '- it returns a **new** list\n',
  '- `reverse=True` sorts from high to low\n\n',
  '```python\npeople = [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]\n',
  'by_age = sorted(people, key=lambda p: p["age"])\n',
  'print(by_age[0]["name"])  # Ada\n```\n\n',
  'That is all it takes.',
];

/** What `regenerate` streams instead of the previous answer. */
export const REGENERATED_ANSWER_PIECES = [
  'Another way to look at it:\n\n',
  '- Pick one small step.\n',
  '- Do it today.\n',
  '- Look back tomorrow and adjust.',
];

/** Scenario `cascade`: the fast model's answer, cut off at its length limit. */
const CUT_OFF_PIECES = ['Five miles ', 'is about'];
const CASCADE_FAST_MODEL = 'llama3.2:1b';
/** The question the semantic cache's saved reply was given to (scenario `saved-reply`). */
const SAVED_QUESTION = 'How many kilometres is 5 miles?';

/** A seeded answer with an XSS payload in its Markdown (scenario `markdown`): it must render inert. */
export const XSS_ANSWER = [
  'Here are two classic payloads, which Hearth must show as text:',
  '',
  '<img src=x onerror="window.__xss=1">',
  '',
  '<script>window.__xss=2</script>',
  '',
  'Inline too: <b onmouseover="window.__xss=4">hover</b>. A [safe link](https://example.com/docs) and a [bad link](javascript:window.__xss=3).',
].join('\n');

const CODE_QUESTION = /\b(code|python|script|function|sort|program)\b/i;

/** A question the seeded notes answer (Folders: /home/ada/Notes/home/printer.md): cited. */
const FILE_QUESTION = /\b(printer|wi-?fi|toner)\b/i;
export const FILE_ANSWER_PIECES = ['Your notes say the office printer ', '(a Brother HL-L2350DW) uses the Wi-Fi ', 'password **tea-kettle-42** [1]; ', 'it only joins the 2.4 GHz network.'];

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export const RECIPES_ZONES: ZonesDto = {
  system: 812,
  tools: 0,
  memory: 0,
  summary: 0,
  history: 0,
  retrieved: 0,
  current: 14,
  output_reserve: 4096,
  input_budget: 126976,
  window: 131072,
  dropped: 0,
};

/** Zones of the seeded code answer (scenario `markdown`): every zone used, 3 messages dropped. */
export const PYTHON_ZONES: ZonesDto = {
  system: 812,
  tools: 0,
  memory: 146,
  summary: 420,
  history: 434,
  retrieved: 0,
  current: 18,
  output_reserve: 4096,
  input_budget: 123904,
  window: 128000,
  dropped: 3,
};

type StoredConversation = ConversationDto & { log: MessageDto[] };

const plain = (id: number, role: 'user' | 'assistant', content: string, state = 'complete'): MessageDto => ({
  id,
  role,
  content,
  state,
  turn: null,
  sources: [],
  tool_calls: [],
});

/** The seeded conversation of scenario `tool-calls`: two answers and their calls. */
function toolConversation(now: number): StoredConversation {
  const log: MessageDto[] = [
    plain(21, 'user', 'Clear out the old drafts in my Notes.'),
    {
      ...plain(
        22,
        'assistant',
        "I didn't delete or move anything: you declined deleting the **drafts** folder, and moving **old-ideas.md** got no answer in time.\n\nThe folder holds a 2023 plan with 48 unstarted items, an ideas file and a scratch folder.",
      ),
      turn: {
        provider: 'openai',
        model: 'gpt-4o-mini',
        input_tokens: 3140,
        output_tokens: 64,
        cached_input_tokens: 1024,
        cost_usd: 0.0006,
        zones: { ...PYTHON_ZONES, tools: 1184, summary: 0, history: 0, dropped: 0, memory: 146, current: 9 },
        fallback_from: null,
        tools_left_out: [],
        stop_reason: 'answer',
        route: null,
        first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
      },
      tool_calls: structuredClone(DRAFTS_CALLS),
    },
    plain(23, 'user', 'Then just start a to-do file for today.'),
    {
      ...plain(24, 'assistant', "Done: **todo-today.md** is in your Notes folder. I couldn't find yesterday's list, and the search for older to-dos timed out."),
      turn: {
        provider: 'local',
        model: 'llama3.2:1b',
        input_tokens: 2668,
        output_tokens: 38,
        cached_input_tokens: 0,
        cost_usd: 0,
        zones: { ...TODO_ZONES },
        fallback_from: null,
        tools_left_out: [...TODO_LEFT_OUT],
        stop_reason: 'answer',
        route: null,
        first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
      },
      tool_calls: structuredClone(TODO_CALLS),
    },
  ];
  return { id: 'c-drafts', title: 'Clear out old drafts', updated_at: now - 20 * MINUTE, messages: log.length, log };
}

function seedConversations(now: number, withMarkdown: boolean): StoredConversation[] {
  const recipes: MessageDto[] = [
    plain(1, 'user', 'What can I cook tonight with chickpeas and spinach?'),
    {
      ...plain(
        2,
        'assistant',
        'A quick chana saag works well:\n\n1. Fry an onion, garlic and ginger.\n2. Add cumin, garam masala and the chickpeas.\n3. Stir in the spinach until it wilts, then finish with lemon.',
      ),
      turn: {
        provider: 'local',
        model: 'llama3.2',
        input_tokens: 826,
        output_tokens: 41,
        cached_input_tokens: 0,
        cost_usd: 0,
        zones: { ...RECIPES_ZONES },
        fallback_from: null,
        tools_left_out: [],
        stop_reason: 'answer',
        route: null,
        first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
      },
    },
  ];
  const trip: MessageDto[] = [
    plain(3, 'user', 'Plan three days in Lisbon for me.'),
    plain(4, 'assistant', 'Day 1: Alfama and the castle in the morning, then a tram ride to', 'interrupted'),
  ];
  const seeded: StoredConversation[] = [
    { id: 'c-recipes', title: 'Dinner with chickpeas', updated_at: now - 2 * 60 * MINUTE, messages: 2, log: recipes },
    { id: 'c-lisbon', title: 'Three days in Lisbon', updated_at: now - 26 * 60 * MINUTE, messages: 2, log: trip },
  ];
  if (withMarkdown) {
    const python: MessageDto[] = [
      plain(5, 'user', 'How do I sort a list of dicts by a key in Python?'),
      {
        ...plain(6, 'assistant', CODE_ANSWER_PIECES.join('')),
        turn: {
          provider: 'openai',
          model: 'gpt-4o-mini',
          input_tokens: 1830,
          output_tokens: 214,
          cached_input_tokens: 1024,
          cost_usd: 0.0031,
          zones: { ...PYTHON_ZONES },
          fallback_from: null,
          tools_left_out: [],
          stop_reason: 'answer',
          route: null,
          first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
        },
      },
    ];
    const html: MessageDto[] = [
      plain(7, 'user', 'What does an XSS payload look like?'),
      {
        ...plain(8, 'assistant', XSS_ANSWER),
        turn: {
          provider: 'openai',
          model: 'mystery-model',
          input_tokens: 912,
          output_tokens: 96,
          cached_input_tokens: 0,
          cost_usd: null,
          zones: null,
          fallback_from: null,
          tools_left_out: [],
          stop_reason: 'answer',
          route: null,
          first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
        },
      },
    ];
    seeded.push(
      { id: 'c-python', title: 'Sorting a list in Python', updated_at: now - 3 * DAY, messages: 2, log: python },
      { id: 'c-html', title: 'Untrusted HTML', updated_at: now - 4 * DAY, messages: 2, log: html },
    );
  }
  return seeded;
}

type ChatCommand =
  | 'chat_status'
  | 'list_conversations'
  | 'get_messages'
  | 'send_message'
  | 'regenerate'
  | 'edit_last_message'
  | 'stop_turn'
  | 'delete_conversation'
  | 'open_in_main';

export type ChatMock = {
  handlers: HandlersFor<ChatCommand>;
  /** Time between streamed pieces (ms). */
  delay(): number;
  setDelay(ms: number): void;
  failNextTurn(): void;
  /** The next turn with tool calls ends for this reason (then back to 'answer'). */
  setNextStopReason(reason: 'cap' | 'timeout'): void;
};

export function createChatMock(options: {
  scenario: Scenario;
  providers: ProvidersMock;
  memory: () => MemoryMock;
  folders: () => FoldersMock;
  emit: <K extends keyof Events>(event: K, payload: Events[K]) => Promise<void>;
}): ChatMock {
  const { scenario, providers, emit } = options;
  const seeded = ['ok', 'markdown', 'memory-empty', 'memory-near-budget', 'memory-off', 'tool-calls'].includes(scenario);
  const conversations: StoredConversation[] = seeded ? seedConversations(Date.now(), scenario === 'markdown') : [];
  if (scenario === 'tool-calls') conversations.push(toolConversation(Date.now()));
  let nextMessageId = 100;
  let nextTurnId = 1;
  let chatDelay = 120;
  let failNext = false;
  let nextStopReason: 'cap' | 'timeout' | null = null;
  const stopRequested = new Set<number>();
  /** Turns a spending cap holds back (scenario `over-budget`). */
  const heldBack = new Set<number>();
  /** Turns sent over the cap ("Send this message anyway"). */
  const sentAnyway = new Set<number>();
  /** Turns the semantic cache answers (scenario `saved-reply`). */
  const savedReply = new Set<number>();
  /** Turns the user sent with a model chosen in the composer. */
  const chosenTier = new Map<number, 'fast' | 'strong'>();

  const estimate = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

  /** Model, tokens, cost and zones of one mock turn. */
  function turnInfo(slot: SlotDto, history: MessageDto[], question: string, answer: string): TurnInfoDto {
    const window = providers.windowFor(slot.model);
    const reserve = 4096;
    const zones: ZonesDto = {
      system: 812,
      tools: TOOLS_ZONE,
      memory: 0,
      summary: 0,
      history: history.reduce((sum, m) => sum + estimate(m.content), 0),
      retrieved: 0,
      current: estimate(question),
      output_reserve: reserve,
      input_budget: window - reserve,
      window,
      dropped: 0,
    };
    const input =
      zones.system + zones.tools + zones.memory + zones.summary + zones.history + zones.retrieved + zones.current;
    const output = estimate(answer);
    const local = providers.isLocal(slot.provider);
    // The built-in model keeps the conversation's prompt: from turn 2 on, all of it but the
    // new message is reused. Other local servers report none; clouds cache a prefix.
    const cached =
      slot.provider === 'builtin'
        ? history.length > 0
          ? input - zones.current
          : 0
        : local
          ? 0
          : Math.min(768, input);
    const price = providers.modelInfo(slot.model);
    let cost: number | null = null;
    if (local) cost = 0;
    else if (typeof price?.input_usd_per_mtok === 'number' && typeof price.output_usd_per_mtok === 'number') {
      const cachedPrice = price.cached_usd_per_mtok ?? price.input_usd_per_mtok;
      cost = ((input - cached) * price.input_usd_per_mtok + cached * cachedPrice + output * price.output_usd_per_mtok) / 1_000_000;
    }
    return {
      provider: slot.provider,
      model: slot.model,
      input_tokens: input,
      output_tokens: output,
      cached_input_tokens: cached,
      cost_usd: cost,
      zones,
      fallback_from: null,
      tools_left_out: [],
      stop_reason: 'answer',
      route: null,
      first_answer: null,
        over_budget: false,
        cached: false,
        cached_from: null,
    };
  }

  const listing = (): ConversationDto[] =>
    [...conversations]
      .sort((a, b) => b.updated_at - a.updated_at)
      .map(({ id, title, updated_at, messages }) => ({ id, title, updated_at, messages }));

  function find(conversationId: string): StoredConversation {
    const conversation = conversations.find((c) => c.id === conversationId);
    if (!conversation) fail('not_found', `No conversation "${conversationId}".`);
    return conversation as StoredConversation;
  }

  function requireReady(): void {
    const current = providers.chatStatus();
    if (!current.ready) fail('no_provider', current.hint ?? 'No model provider.');
  }


  /** Stream the answer for one turn (runs after the command has returned). */
  async function streamTurn(
    turnId: number,
    conversation: StoredConversation | null,
    question: string,
    pieces: string[],
  ): Promise<void> {
    await sleep(chatDelay);
    if (heldBack.delete(turnId)) {
      await emit('chat_failed', { turn_id: turnId, ...OVER_BUDGET_FAILURE });
      return;
    }
    // rate-limited: the provider's limit holds the call a while before the answer streams.
    if (scenario === 'rate-limited') {
      await emit('chat_waiting', { turn_id: turnId, provider: 'openai', seconds: 12 });
      await sleep(chatDelay * 6);
    }
    if (scenario === 'chat-fails' || failNext) {
      failNext = false;
      await emit('chat_failed', { turn_id: turnId, ...CHAT_FAILURE });
      return;
    }
    const history = conversation ? conversation.log.slice(0, -1) : [];
    let answer = '';
    let stopped = false;
    // The model's tool calls come first (the scripted turn only).
    const toolCalls: ToolCallDto[] = [];
    const script = pieces === NOTES_ANSWER_PIECES ? NOTES_SCRIPT : [];
    for (const scripted of script) {
      if (stopRequested.has(turnId)) break;
      await emit('chat_tool_started', { turn_id: turnId, call_id: scripted.call_id, tool: scripted.tool });
      await sleep(chatDelay);
      const ended: ToolCallDto = stopRequested.has(turnId)
        ? { ...scripted, result_status: 'cancelled', result: 'The turn was stopped before the call ran.' }
        : structuredClone(scripted);
      toolCalls.push(ended);
      await emit('chat_tool', { turn_id: turnId, call: structuredClone(ended) });
    }
    const stopReason = script.length > 0 && nextStopReason !== null ? nextStopReason : 'answer';
    if (script.length > 0) nextStopReason = null;
    // Cascade: the fast model's answer streams, is cut off, and the main model answers again.
    let firstAnswer: string | null = null;
    const chosen = chosenTier.get(turnId) ?? null;
    chosenTier.delete(turnId);
    if (scenario === 'cascade' && chosen === null) {
      firstAnswer = '';
      for (const piece of CUT_OFF_PIECES) {
        firstAnswer += piece;
        await emit('chat_token', { turn_id: turnId, text: piece });
        await sleep(chatDelay);
      }
      await emit('chat_escalating', {
        turn_id: turnId,
        from: CASCADE_FAST_MODEL,
        to: 'llama3.2',
        text: 'strong — escalated: the fast answer was cut off',
      });
      await sleep(chatDelay);
    }
    for (const piece of pieces) {
      if (stopRequested.has(turnId)) {
        stopped = true;
        break;
      }
      answer += piece;
      await emit('chat_token', { turn_id: turnId, text: piece });
      await sleep(chatDelay);
    }
    if (stopRequested.has(turnId)) stopped = true;
    const slots = providers.slots();
    const ready = providers.chatStatus();
    const main = slots.from_env
      ? { provider: 'env', model: 'llama3.2' }
      : (slots.main ?? { provider: ready.provider ?? 'local', model: ready.model ?? 'llama3.2' });
    const answeredBy =
      chosen === 'fast' && slots.fast
        ? slots.fast
        : scenario === 'fallback' && slots.fallback_enabled && slots.fallback
          ? slots.fallback
          : main;
    const turn = turnInfo(answeredBy, history, question, answer);
    if (chosen !== null) {
      turn.route = { tier: chosen, text: `${chosen} — you chose it for this message`, escalated_from: null };
    }
    if (savedReply.delete(turnId)) {
      Object.assign(turn, { cached: true, cached_from: SAVED_QUESTION, input_tokens: 0, output_tokens: 0, cost_usd: 0 });
    }
    if (answeredBy === slots.fallback) turn.fallback_from = main.model;
    turn.stop_reason = stopped ? 'cancelled' : stopReason;
    const overCap = sentAnyway.delete(turnId);
    if (overCap) turn.over_budget = true;
    if (firstAnswer !== null) {
      turn.route = {
        tier: 'strong',
        text: 'strong — escalated: the fast answer was cut off',
        escalated_from: CASCADE_FAST_MODEL,
      };
      turn.first_answer = firstAnswer;
    }
    // The passages of watched folders the answer was given (the core's FolderRetrieval).
    const sources = pieces === FILE_ANSWER_PIECES ? options.folders().sourcesFor(question) : [];
    let messageId: number | null = null;
    if (conversation) {
      messageId = nextMessageId++;
      conversation.log.push({
        id: messageId,
        role: 'assistant',
        content: answer,
        state: stopped ? 'stopped' : 'complete',
        turn: structuredClone(turn),
        sources: structuredClone(sources),
        tool_calls: structuredClone(toolCalls),
      });
      conversation.messages = conversation.log.length;
      conversation.updated_at = Date.now();
    }
    await emit('chat_done', {
      turn_id: turnId,
      conversation_id: conversation?.id ?? null,
      answer,
      stopped,
      input_tokens: turn.input_tokens,
      output_tokens: turn.output_tokens,
      message_id: messageId,
      turn,
      sources,
      tool_calls: toolCalls,
      stop_reason: stopped ? 'cancelled' : stopReason,
      budget: overCap
        ? {
            period: 'day',
            provider: null,
            spent_usd: 5.02,
            cap_usd: 5,
            text: 'You have spent $5.02 of your daily budget of $5.00 (100 %).',
          }
        : null,
    });
    // After the answer, the core reconciles memory in the background (never for a temporary chat).
    if (conversation && messageId !== null && !stopped) options.memory().afterAnswer(conversation.id, messageId);
  }

  const answerFor = (question: string): string[] =>
    NOTES_QUESTION.test(question)
      ? NOTES_ANSWER_PIECES
      : CODE_QUESTION.test(question)
        ? CODE_ANSWER_PIECES
        : FILE_QUESTION.test(question) && options.folders().sourcesFor(question).length > 0
          ? FILE_ANSWER_PIECES
          : MOCK_ANSWER_PIECES;

  function startTurn(conversation: StoredConversation | null, question: string, pieces: string[]): { turn_id: number } {
    const turnId = nextTurnId++;
    void streamTurn(turnId, conversation, question, pieces);
    return { turn_id: turnId };
  }

  function lastUserIndex(conversation: StoredConversation): number {
    for (let i = conversation.log.length - 1; i >= 0; i--) if (conversation.log[i]?.role === 'user') return i;
    return -1;
  }


  const handlers: HandlersFor<ChatCommand> = {
    chat_status: () => providers.chatStatus(),
    list_conversations: () => listing(),
    get_messages: ({ conversationId }) => structuredClone(find(conversationId).log),
    send_message: ({ conversationId, text, temporary, overBudget, tier }) => {
      requireReady();
      if (scenario === 'over-budget' && overBudget !== true) {
        // Held back before anything is stored.
        const turnId = nextTurnId++;
        heldBack.add(turnId);
        void streamTurn(turnId, null, text, []);
        return { turn_id: turnId };
      }
      let conversation: StoredConversation | null = null;
      // chat-fails: the provider refuses before anything is stored.
      if (!temporary && scenario !== 'chat-fails') {
        if (conversationId === null) {
          const title = text.trim().split('\n')[0]?.slice(0, 48) ?? 'New chat';
          conversation = { id: `c-${Date.now()}-${nextTurnId}`, title, updated_at: Date.now(), messages: 0, log: [] };
          conversations.push(conversation);
        } else {
          conversation = find(conversationId);
        }
        conversation.log.push(plain(nextMessageId++, 'user', text));
        conversation.messages = conversation.log.length;
        conversation.updated_at = Date.now();
      }
      const started = startTurn(conversation, text, answerFor(text));
      if (overBudget === true) sentAnyway.add(started.turn_id);
      if (tier === 'fast' || tier === 'strong') chosenTier.set(started.turn_id, tier);
      // saved-reply: the first message of a new chat is answered by the semantic cache.
      if (scenario === 'saved-reply' && conversation !== null && conversation.log.length === 1) {
        savedReply.add(started.turn_id);
      }
      return started;
    },
    regenerate: ({ conversationId }) => {
      requireReady();
      const conversation = find(conversationId);
      const userIndex = lastUserIndex(conversation);
      if (userIndex < 0) fail('nothing_to_regenerate', 'This conversation has no question to answer again.');
      // The old last answer goes; the new one is stored when it is done.
      conversation.log.splice(userIndex + 1);
      conversation.messages = conversation.log.length;
      const question = conversation.log[userIndex]?.content ?? '';
      return startTurn(conversation, question, REGENERATED_ANSWER_PIECES);
    },
    edit_last_message: ({ conversationId, text }) => {
      requireReady();
      if (text.trim() === '') fail('empty_message', 'The message is empty.');
      const conversation = find(conversationId);
      const userIndex = lastUserIndex(conversation);
      if (userIndex < 0) fail('nothing_to_edit', 'This conversation has no message to edit.');
      const user = conversation.log[userIndex] as MessageDto;
      user.content = text;
      conversation.log.splice(userIndex + 1);
      conversation.messages = conversation.log.length;
      conversation.updated_at = Date.now();
      return startTurn(conversation, text, answerFor(text));
    },
    stop_turn: ({ turnId }) => {
      stopRequested.add(turnId);
      return null;
    },
    delete_conversation: ({ conversationId, deleteMemories }) => {
      const index = conversations.findIndex((c) => c.id === conversationId);
      if (index >= 0) conversations.splice(index, 1);
      if (deleteMemories) options.memory().forgetConversation(conversationId);
      return null;
    },
    // The real shell shows the main window and emits `open_conversation` to it. Here both
    // windows are separate pages, so the event is emitted to this page (tests emit it in main).
    open_in_main: async ({ conversationId }) => {
      await emit('open_conversation', { conversation_id: conversationId });
      return null;
    },
  };

  return {
    handlers,
    delay: () => chatDelay,
    setDelay: (ms) => {
      chatDelay = ms;
    },
    failNextTurn: () => {
      failNext = true;
    },
    setNextStopReason: (reason) => {
      nextStopReason = reason;
    },
  };
}
