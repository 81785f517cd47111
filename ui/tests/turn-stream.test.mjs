// The turn-event protocol (src/lib/turn-stream.ts) on its own, loaded through Vite in Node: a
// turn's tool events are buffered with the rest until the command returned its turn id, then
// replayed in order; `chat_done`'s tool calls are the truth; other turns' events are ignored.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createServer } from 'vite';
import { UI_ROOT } from './harness.mjs';

let vite;
let TurnStream;
before(async () => {
  vite = await createServer({
    root: UI_ROOT,
    configFile: path.join(UI_ROOT, 'vite.config.ts'),
    logLevel: 'silent',
    appType: 'custom',
    server: { middlewareMode: true, hmr: false },
  });
  ({ TurnStream } = await vite.ssrLoadModule('/src/lib/turn-stream.ts'));
});
after(async () => {
  await vite?.close();
});

const call = (call_id, tool, fields = {}) => ({
  call_id,
  tool,
  origin: 'built_in',
  risk: 'read',
  arguments: '{}',
  decision: 'allowed',
  decided_by: 'auto',
  escalated: false,
  result_status: 'ok',
  result: 'ok',
  ...fields,
});

const done = (turnId, toolCalls, answer = 'All done.') => ({
  turn_id: turnId,
  conversation_id: 'c-1',
  answer,
  stopped: false,
  input_tokens: 10,
  output_tokens: 3,
  message_id: 7,
  turn: null,
  sources: [],
  tool_calls: toolCalls,
  stop_reason: 'answer',
});

/** A TurnStream whose handlers log what they get: [kind, detail]. */
function recorded() {
  const log = [];
  const shown = (calls) => calls.map((c) => `${c.tool}:${c.call === null ? 'running' : c.call.result_status}`).join(',');
  const stream = new TurnStream({
    token: (piece) => log.push(['token', piece]),
    toolStarted: (event, calls) => log.push(['started', `${event.call_id} [${shown(calls)}]`]),
    toolEnded: (ended, calls) => log.push(['ended', `${ended.call_id} [${shown(calls)}]`]),
    done: (event) => log.push(['done', event.answer]),
    failed: (error) => log.push(['failed', error.code]),
  });
  return { stream, log };
}

describe('TurnStream and tool calls', () => {
  test('tool events that arrive before the turn id are buffered, then replayed in order', () => {
    const { stream, log } = recorded();
    const read = call('a', 'read_file');
    const denied = call('b', 'delete_file', { risk: 'destructive', decision: 'denied', decided_by: 'user', result_status: 'not_run' });
    stream.handle({ kind: 'token', event: { turn_id: 4, text: 'Let me look. ' } });
    stream.handle({ kind: 'tool_started', event: { turn_id: 4, call_id: 'a', tool: 'read_file' } });
    stream.handle({ kind: 'tool', event: { turn_id: 4, call: read } });
    stream.handle({ kind: 'tool_started', event: { turn_id: 4, call_id: 'b', tool: 'delete_file' } });
    assert.deepEqual(log, [], 'nothing is shown before the turn id is known');
    assert.deepEqual(stream.toolCalls, []);

    stream.started(4);
    assert.deepEqual(log, [
      ['token', 'Let me look. '],
      ['started', 'a [read_file:running]'],
      ['ended', 'a [read_file:ok]'],
      ['started', 'b [read_file:ok,delete_file:running]'],
    ]);
    // After the id: handled as they come.
    stream.handle({ kind: 'tool', event: { turn_id: 4, call: denied } });
    assert.deepEqual(log.at(-1), ['ended', 'b [read_file:ok,delete_file:not_run]']);
    assert.equal(stream.toolCalls.length, 2);
    assert.equal(stream.toolCalls[1].call.decision, 'denied');
  });

  test("chat_done's tool calls replace what the events built; another turn's events and late ones are ignored", () => {
    const { stream, log } = recorded();
    stream.started(9);
    stream.handle({ kind: 'tool_started', event: { turn_id: 8, call_id: 'x', tool: 'read_file' } });
    stream.handle({ kind: 'tool_started', event: { turn_id: 9, call_id: 'a', tool: 'read_file' } });
    assert.deepEqual(log, [['started', 'a [read_file:running]']], "turn 8's event is not this turn's");

    // The call never ended as an event (it was stopped): done says what became of it.
    const stopped = call('a', 'read_file', { result_status: 'cancelled', result: 'stopped' });
    stream.handle({ kind: 'done', event: done(9, [stopped]) });
    assert.deepEqual(log.at(-1), ['done', 'All done.']);
    assert.deepEqual(stream.toolCalls, [{ call_id: 'a', tool: 'read_file', call: stopped }]);
    assert.equal(stream.finished, true);
    stream.handle({ kind: 'tool_started', event: { turn_id: 9, call_id: 'late', tool: 'read_file' } });
    assert.equal(log.length, 2, 'nothing after done');
  });

  test('a repeated call id ends the first running call of that id; an end never announced is appended', () => {
    const { stream } = recorded();
    stream.started(1);
    stream.handle({ kind: 'tool_started', event: { turn_id: 1, call_id: 'same', tool: 'read_file' } });
    stream.handle({ kind: 'tool_started', event: { turn_id: 1, call_id: 'same', tool: 'read_file' } });
    stream.handle({ kind: 'tool', event: { turn_id: 1, call: call('same', 'read_file') } });
    stream.handle({ kind: 'tool', event: { turn_id: 1, call: call('same', 'read_file', { decision: 'invalid', result_status: 'not_run' }) } });
    stream.handle({ kind: 'tool', event: { turn_id: 1, call: call('other', 'list_directory') } });
    assert.deepEqual(
      stream.toolCalls.map((c) => [c.call_id, c.call?.decision ?? 'running']),
      [
        ['same', 'allowed'],
        ['same', 'invalid'],
        ['other', 'allowed'],
      ],
    );
  });
});
