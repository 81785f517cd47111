// Browser tests of the Chat screen against the mock core (dist-mock/), served with the production CSP.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  mockServer,
  screenshot,
  session,
  until,
} from './harness.mjs';

const require = createRequire(import.meta.url);
const AXE = require.resolve('axe-core/axe.min.js');

// The mock's answer is Markdown (a paragraph and a two-item list); its rendered text, whitespace collapsed:
const FULL_ANSWER = 'Good question. Here is a short plan: Start with what you already know. Take the next step and check how it went.';
/** Usage line of a mock answer from the local model. */
const LOCAL_USAGE = /^llama3\.2 · [\d,]+ tokens in · [\d,]+ out · free \(local\)$/;

/** Whitespace collapsed, ends trimmed. */
const flat = (text) => (text ?? '').replace(/\s+/g, ' ').trim();

const server = mockServer();

const url = (scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/chat`;

function assertNoProblems(problems) {
  assert.deepEqual(problems, [], 'no console errors/warnings, page errors, CSP violations or failed requests');
}

/** Open Chat and wait until the core's answers (status, list) are on screen. */
async function openChat(page, scenario) {
  await page.goto(url(scenario));
  await page.locator('main h1').waitFor();
  if (scenario === 'no-provider') {
    await page.getByRole('heading', { name: 'Choose a model to start chatting' }).waitFor();
  } else {
    await page.getByRole('textbox', { name: 'Message Hearth' }).waitFor();
  }
}

const composer = (page) => page.getByRole('textbox', { name: 'Message Hearth' });
const lastAnswer = (page) => page.locator('[role="log"] article.assistant').last();
const conversationItems = (page) => page.locator('nav[aria-label="Conversations"] button.item');
const item = (page, title) => conversationItems(page).filter({ hasText: title });

async function ipcCalls(page, cmd) {
  return page.evaluate((c) => window.__ipcCalls.filter((call) => call.cmd === c).map((call) => call.args), cmd);
}

/** Record every distinct text the last assistant message shows, from now on. */
async function watchAnswer(page) {
  await page.evaluate(() => {
    window.__answerTexts = [];
    const record = () => {
      const answers = document.querySelectorAll('[role="log"] article.assistant');
      const text = answers[answers.length - 1]?.querySelector('.text')?.textContent ?? '';
      const seen = window.__answerTexts;
      if (seen[seen.length - 1] !== text) seen.push(text);
    };
    new MutationObserver(record).observe(document.querySelector('[role="log"]'), {
      subtree: true,
      childList: true,
      characterData: true,
    });
  });
}

describe('Chat', () => {
  test('sending shows the message at once, streams the answer piece by piece, ends with the token line', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    assert.equal(await page.getByRole('log').getAttribute('aria-live'), 'polite');
    await watchAnswer(page);

    // Tab reaches the composer; Shift+Enter adds a line, Enter sends.
    await composer(page).focus();
    await page.keyboard.type('How do I cook dried beans?');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('Quickly, please.');
    assert.equal(await composer(page).inputValue(), 'How do I cook dried beans?\nQuickly, please.');
    await page.keyboard.press('Enter');

    // The user's message and an (empty, streaming) answer show immediately.
    const user = page.locator('[role="log"] article.user').last();
    await user.waitFor();
    assert.equal(await user.locator('.who').textContent(), 'You');
    assert.equal(await user.locator('.text').textContent(), 'How do I cook dried beans?\nQuickly, please.');
    assert.equal(await lastAnswer(page).locator('.who').textContent(), 'Hearth');
    assert.equal(await composer(page).inputValue(), '', 'the composer is cleared');
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Message Hearth');
    await page.getByRole('button', { name: 'Stop' }).waitFor();

    // Done: complete, token line, Send is back, the new conversation is listed and current.
    await page.locator('[role="log"] .usage').waitFor();
    assert.equal(flat(await lastAnswer(page).locator('.text').textContent()), FULL_ANSWER);
    assert.equal(await lastAnswer(page).locator('.text .markdown ol > li').count(), 2, 'rendered as Markdown');
    assert.equal(await lastAnswer(page).getAttribute('data-state'), 'complete');
    assert.equal(await lastAnswer(page).locator('.badge').count(), 0);
    assert.match(await lastAnswer(page).locator('.usage').innerText(), LOCAL_USAGE);
    await page.getByRole('button', { name: 'Send' }).waitFor();
    const white = await user.locator('.text').evaluate((el) => getComputedStyle(el).whiteSpace);
    assert.equal(white, 'pre-wrap', "the user's line breaks are preserved");

    const seen = await page.evaluate(() => window.__answerTexts.map((t) => t.replace(/\s+/g, ' ').trim()).filter(Boolean));
    assert.ok(seen.length >= 4, `the answer grew in pieces: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].startsWith(seen[i - 1]), 'each piece extends the last');

    const current = page.locator('nav[aria-label="Conversations"] [aria-current="true"]');
    await until(page, () => document.querySelector('nav[aria-label="Conversations"] [aria-current="true"] .title')?.textContent === 'How do I cook dried beans?');
    assert.equal(await current.count(), 1);
    assert.equal(await conversationItems(page).count(), 3);
    assert.deepEqual(await ipcCalls(page, 'send_message'), [
      { conversationId: null, text: 'How do I cook dried beans?\nQuickly, please.', temporary: false },
    ]);

    // A follow-up goes to the same conversation.
    await composer(page).fill('Thanks!');
    await page.getByRole('button', { name: 'Send' }).click();
    await until(page, () => document.querySelectorAll('[role="log"] .usage').length === 2);
    const sends = await ipcCalls(page, 'send_message');
    assert.match(sends[1].conversationId, /^c-/);
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Message Hearth');
    assertNoProblems(problems);
  });

  test('Stop during streaming keeps the partial answer and marks it "Stopped"', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    await page.evaluate(() => window.__hearthMock.setChatDelay(400));
    await composer(page).fill('Tell me a long story');
    await composer(page).press('Enter');
    await until(page, () => (document.querySelector('[role="log"] article.assistant:last-of-type .text')?.textContent ?? '').length > 0);
    await page.getByRole('button', { name: 'Stop' }).click();
    await lastAnswer(page).locator('.badge').waitFor();
    assert.equal(await lastAnswer(page).locator('.badge').textContent(), 'Stopped');
    assert.equal(await lastAnswer(page).getAttribute('data-state'), 'stopped');
    const partial = flat(await lastAnswer(page).locator('.text').textContent());
    assert.ok(partial.length > 0 && partial.length < FULL_ANSWER.length, `partial answer: ${JSON.stringify(partial)}`);
    assert.ok(FULL_ANSWER.startsWith(partial));
    assert.match(await lastAnswer(page).locator('.usage').innerText(), /tokens in · \d+ out/);
    await page.getByRole('button', { name: 'Send' }).waitFor();
    const stops = await ipcCalls(page, 'stop_turn');
    const [send] = await ipcCalls(page, 'send_message');
    assert.equal(stops.length, 1);
    assert.equal(typeof stops[0].turnId, 'number');
    assert.ok(send);
    assertNoProblems(problems);
  });

  test('the seeded conversation with an interrupted answer shows the badge', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    assert.equal(await conversationItems(page).count(), 2);
    const lisbon = item(page, 'Three days in Lisbon');
    assert.match(await lisbon.innerText(), /yesterday|1 day ago/);
    await lisbon.click();
    await page.getByText('Interrupted — the answer was cut off').waitFor();
    assert.equal(await lisbon.getAttribute('aria-current'), 'true');
    assert.match(flat(await lastAnswer(page).locator('.text').textContent()), /tram ride to$/);
    assert.deepEqual(await ipcCalls(page, 'get_messages'), [{ conversationId: 'c-lisbon' }]);
    assert.equal(await page.getByRole('heading', { level: 2, name: 'Three days in Lisbon' }).count(), 1);
    assertNoProblems(problems);
  });

  test('Temporary chat shows its note and sends with temporary: true; nothing is listed', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    const note = page.getByText('Temporary: nothing from this chat is saved or remembered.');
    assert.equal(await note.count(), 0);
    const toggle = page.getByRole('switch', { name: 'Temporary chat' });
    await toggle.check();
    await note.waitFor();
    await composer(page).fill('Just between us');
    await composer(page).press('Enter');
    await page.locator('[role="log"] .usage').waitFor();
    assert.deepEqual(await ipcCalls(page, 'send_message'), [{ conversationId: null, text: 'Just between us', temporary: true }]);
    // The messages stay on screen; no conversation is created or selected.
    assert.equal(await page.locator('[role="log"] article').count(), 2);
    assert.equal(await page.locator('nav[aria-label="Conversations"] [aria-current="true"]').count(), 0);
    assert.equal(await conversationItems(page).count(), 2);
    assert.ok(await note.isVisible());
    assertNoProblems(problems);
  });

  test('no provider: an honest empty state with the hint, a local server to use and the command, no composer', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page, 'no-provider');
    await page.getByText('Ollama is running on this computer').waitFor();
    const text = await page.locator('main').innerText();
    assert.match(text, /No model provider is set up yet\. Hearth can run a model on this computer, use a model server you already run/);
    assert.equal(
      await page.locator('main pre code').textContent(),
      'hearth providers add local --preset ollama --model llama3.2',
    );
    assert.equal(await composer(page).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Send' }).count(), 0);
    assert.match(text, /No saved conversations yet/);
    await screenshot(page, 'chat-no-provider');
    assertNoProblems(problems);
  });

  test('a failed turn shows the error as an alert and keeps the user message', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page, 'chat-fails');
    await composer(page).fill('Hello?');
    await composer(page).press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /TestProvider rejected the request \(401\): check your API key for TestProvider/);
    assert.equal(await page.locator('[role="log"] article.user .text').textContent(), 'Hello?');
    assert.equal(await page.locator('[role="log"] article.assistant').count(), 0, 'no empty answer is left behind');
    // The alert sits under the messages, and sending works again.
    const below = await page.evaluate(() => {
      const logEl = document.querySelector('[role="log"]');
      const alertEl = document.querySelector('[role="alert"]');
      return Boolean(logEl && alertEl && logEl.compareDocumentPosition(alertEl) & Node.DOCUMENT_POSITION_FOLLOWING);
    });
    assert.ok(below, 'the alert comes after the messages');
    await page.getByRole('button', { name: 'Send' }).waitFor();
    assertNoProblems(problems);
  });

  test('deleting a conversation asks inline first, then deletes it', async (t) => {
    const { page, problems } = await session(t);
    let dialogs = 0;
    page.on('dialog', (dialog) => {
      dialogs += 1;
      void dialog.dismiss();
    });
    await openChat(page);
    await item(page, 'Dinner with chickpeas').click();
    await page.locator('[role="log"] article.assistant').waitFor();

    const del = page.getByRole('button', { name: 'Delete conversation Dinner with chickpeas' });
    await del.click();
    const confirm = page.getByRole('group', { name: 'Delete conversation Dinner with chickpeas?' });
    await confirm.waitFor();
    assert.match(await confirm.innerText(), /Delete “Dinner with chickpeas”\?/);
    assert.deepEqual(await ipcCalls(page, 'delete_conversation'), [], 'nothing deleted before confirming');

    // Cancel (Escape) keeps it and returns focus to the delete button.
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Delete conversation Dinner with chickpeas');

    await del.click();
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await item(page, 'Dinner with chickpeas').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'delete_conversation'), [{ conversationId: 'c-recipes', deleteMemories: false }]);
    assert.deepEqual(await conversationItems(page).allInnerTexts().then((xs) => xs.map((x) => x.split('\n')[0])), [
      'Three days in Lisbon',
    ]);
    // The open conversation was the deleted one: back to a new chat.
    assert.equal(await page.locator('[role="log"] article').count(), 0);
    assert.equal(dialogs, 0, 'no window.confirm');
    assertNoProblems(problems);
  });

  test('deleting a conversation offers to delete the memories learned in it (unchecked by default)', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    await page.getByRole('button', { name: 'Delete conversation Dinner with chickpeas' }).click();
    const confirm = page.getByRole('group', { name: 'Delete conversation Dinner with chickpeas?' });
    const also = confirm.getByRole('checkbox', { name: 'Also delete the 2 memories learned in this conversation' });
    await also.waitFor();
    assert.deepEqual(await ipcCalls(page, 'count_conversation_memories'), [{ conversationId: 'c-recipes' }]);
    assert.equal(await also.isChecked(), false);
    await also.check();
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await item(page, 'Dinner with chickpeas').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'delete_conversation'), [{ conversationId: 'c-recipes', deleteMemories: true }]);
    const left = await page.evaluate(() => window.__hearthMock.memories().filter((m) => m.source.conversation_id === 'c-recipes'));
    assert.deepEqual(left, [], 'its memories went with it');

    // A conversation nothing was learned in: no checkbox.
    await page.goto(url('markdown'));
    await composer(page).waitFor();
    await page.getByRole('button', { name: 'Delete conversation Sorting a list in Python' }).click();
    const plain = page.getByRole('group', { name: 'Delete conversation Sorting a list in Python?' });
    await plain.waitFor();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'count_conversation_memories'));
    assert.equal(await plain.getByRole('checkbox').count(), 0);
    await plain.getByRole('button', { name: 'Delete', exact: true }).click();
    await item(page, 'Sorting a list in Python').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'delete_conversation'), [{ conversationId: 'c-python', deleteMemories: false }]);
    assertNoProblems(problems);
  });

  test('"Memory updated" appears under the answer that taught something; it lists the changes and each can be undone', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    await page.evaluate(() => window.__hearthMock.setChatDelay(20));
    await composer(page).fill('Hello!');
    await composer(page).press('Enter');
    await until(page, () => document.querySelectorAll('[role="log"] .usage').length === 1);
    await composer(page).fill('Plan my week, please.');
    await composer(page).press('Enter');
    await until(page, () => document.querySelectorAll('[role="log"] .usage').length === 2);

    // The mock learns after the second answer: one memory added, one updated.
    const chip = lastAnswer(page).getByRole('button', { name: /^Memory updated/ });
    await chip.waitFor();
    assert.equal(await page.locator('[data-testid="memory-chip"]').count(), 1, 'only under the answer that taught it');
    assert.equal(flat(await chip.innerText()), 'Memory updated · 2 changes');
    assert.equal(await chip.getAttribute('aria-expanded'), 'false');
    await chip.click();
    assert.equal(await chip.getAttribute('aria-expanded'), 'true');
    const changes = lastAnswer(page).locator('[data-testid="memory-chip"] li');
    const shown = () =>
      changes.evaluateAll((items) =>
        items.map((li) => {
          const copy = li.cloneNode(true);
          copy.querySelectorAll('.visually-hidden').forEach((hidden) => hidden.remove());
          return (copy.textContent ?? '').replace(/\s+/g, ' ').trim();
        }),
      );
    assert.deepEqual(await shown(), [
      'Remembered: Likes to plan one small step at a time Undo',
      'Updated: Keep answers short and use bullet points → Keep answers short; use numbered steps for plans Undo',
    ]);
    await screenshot(page, 'chat-memory-chip');

    const added = (await page.evaluate(() => window.__hearthMock.memories())).find((m) => m.text === 'Likes to plan one small step at a time');
    assert.ok(added, 'the mock stored the new memory');
    const answerId = Number(await lastAnswer(page).getAttribute('data-message-id'));
    assert.equal(added.source.message_id, answerId, 'learned from this answer');

    await changes.nth(0).getByRole('button', { name: 'Undo “Remembered: Likes to plan one small step at a time”' }).click();
    await changes.nth(0).getByText('Undone').waitFor();
    assert.deepEqual(await ipcCalls(page, 'undo_memory_change'), [
      { change: { memory_id: added.id, op: 'add', text: 'Likes to plan one small step at a time', old_text: null, proposal_id: null } },
    ]);
    await until(page, () => document.activeElement?.classList.contains('undone-note'));
    assert.equal(await changes.nth(0).getByRole('button').count(), 0);
    assert.equal(flat(await chip.innerText()), 'Memory updated · 1 change');
    await changes.nth(1).getByRole('button', { name: /^Undo/ }).click();
    await changes.nth(1).getByText('Undone').waitFor();
    assert.deepEqual((await ipcCalls(page, 'undo_memory_change'))[1], {
      change: {
        memory_id: 'm-brief',
        op: 'update',
        text: 'Keep answers short; use numbered steps for plans',
        old_text: 'Keep answers short and use bullet points',
        proposal_id: null,
      },
    });
    const memories = await page.evaluate(() => window.__hearthMock.memories());
    assert.ok(!memories.some((m) => m.text === 'Likes to plan one small step at a time'), 'the added memory is gone');
    assert.equal(memories.find((m) => m.id === 'm-brief').text, 'Keep answers short and use bullet points', 'the old text is back');
    assert.equal(flat(await chip.innerText()), 'Memory updated · all changes undone');

    // The chip stays with its answer across conversations.
    await item(page, 'Three days in Lisbon').click();
    await page.getByText('Interrupted — the answer was cut off').waitFor();
    assert.equal(await page.locator('[data-testid="memory-chip"]').count(), 0);
    await item(page, 'Hello!').click();
    await page.locator('[data-testid="memory-chip"]').waitFor();
    assertNoProblems(problems);
  });

  test('a "Forgot" change and an undo the core refuses are shown as such', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    await item(page, 'Three days in Lisbon').click();
    await page.getByText('Interrupted — the answer was cut off').waitFor();
    await page.evaluate(() =>
      window.__hearthMock.emit('memory_updated', {
        conversation_id: 'c-lisbon',
        message_id: 4,
        changes: [{ memory_id: 'm-gone', op: 'remove', text: 'Works night shifts as a nurse', old_text: null, proposal_id: null }],
      }),
    );
    const chip = page.getByRole('button', { name: /^Memory updated/ });
    await chip.click();
    const change = page.locator('[data-testid="memory-chip"] li');
    assert.match(flat(await change.innerText()), /^Forgot: Works night shifts as a nurse/);
    await change.getByRole('button', { name: /^Undo/ }).click();
    const alert = change.getByRole('alert');
    await alert.waitFor();
    assert.match(flat(await alert.innerText()), /^Couldn't undo: there is no memory m-gone$/);
    await change.getByRole('button', { name: /^Undo/ }).waitFor();
    assertNoProblems(problems);
  });

  test('keyboard: Tab reaches the composer, arrows move in the list, Ctrl+N starts a new chat', async (t) => {
    const { page, problems } = await session(t);
    await openChat(page);
    // Into the conversation list by Tab from the New chat button, then arrows.
    await page.getByRole('button', { name: 'New chat' }).focus();
    await page.keyboard.press('Tab');
    await until(page, () => document.activeElement?.textContent?.includes('Dinner with chickpeas'));
    await page.keyboard.press('ArrowDown');
    await until(page, () => document.activeElement?.textContent?.includes('Three days in Lisbon'));
    await page.keyboard.press('Enter');
    await page.getByText('Interrupted — the answer was cut off').waitFor();

    // Tab onwards reaches the composer.
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Message Hearth');
    }
    assert.ok(reached, 'the composer is in the Tab order');
    await page.keyboard.type('half-written');

    await page.keyboard.press('Control+n');
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Message Hearth');
    assert.equal(await composer(page).inputValue(), '');
    assert.equal(await page.locator('[role="log"] article').count(), 0);
    assert.equal(await page.locator('nav[aria-label="Conversations"] [aria-current="true"]').count(), 0);
    assert.equal(await page.getByRole('heading', { level: 2, name: 'New chat' }).count(), 1);
    assertNoProblems(problems);
  });
});

describe('Chat: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations with messages present (${colorScheme}); screenshot`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openChat(page);
      await assertAxeClean(page, `chat, new (${colorScheme})`);
      await item(page, 'Three days in Lisbon').click();
      await page.getByText('Interrupted — the answer was cut off').waitFor();
      await composer(page).fill('And what about day two?');
      await composer(page).press('Enter');
      await page.locator('[role="log"] .usage').waitFor();
      await page.getByRole('button', { name: 'Send' }).waitFor();
      await assertAxeClean(page, `chat with messages (${colorScheme})`);
      // With the inline delete confirm and the temporary note showing.
      await page.getByRole('button', { name: 'Delete conversation Dinner with chickpeas' }).click();
      await assertAxeClean(page, `chat, confirm delete (${colorScheme})`);
      await page.keyboard.press('Escape');
      await page.mouse.move(700, 500);
      await composer(page).focus();
      await screenshot(page, `chat-${colorScheme}`);
      await page.getByRole('switch', { name: 'Temporary chat' }).check();
      await assertAxeClean(page, `chat, temporary (${colorScheme})`);
      assertNoProblems(problems);
    });

    test(`axe finds no violations with "Memory updated" expanded and a delete offering memories (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openChat(page);
      await page.evaluate(() => window.__hearthMock.setChatDelay(20));
      for (const text of ['Hello!', 'Plan my week, please.']) {
        await composer(page).fill(text);
        await composer(page).press('Enter');
        await page.getByRole('button', { name: 'Send' }).waitFor();
      }
      await lastAnswer(page).getByRole('button', { name: /^Memory updated/ }).click();
      await lastAnswer(page).locator('[data-testid="memory-chip"] li').first().getByRole('button', { name: /^Undo/ }).click();
      await lastAnswer(page).getByText('Undone').waitFor();
      await assertAxeClean(page, `chat, memory chip (${colorScheme})`);
      await screenshot(page, `chat-memory-chip-${colorScheme}`);
      await page.getByRole('button', { name: 'Delete conversation Dinner with chickpeas' }).click();
      await page.getByRole('checkbox', { name: /Also delete the 2 memories/ }).waitFor();
      await assertAxeClean(page, `chat, delete with memories (${colorScheme})`);
      assertNoProblems(problems);
    });

    test(`axe finds no violations without a provider and after a failure (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openChat(page, 'no-provider');
      await assertAxeClean(page, `chat/no-provider (${colorScheme})`);
      await openChat(page, 'chat-fails');
      await composer(page).fill('Hello?');
      await composer(page).press('Enter');
      await page.getByRole('alert').waitFor();
      await assertAxeClean(page, `chat/chat-fails (${colorScheme})`);
      assertNoProblems(problems);
    });
  }
});

async function assertAxeClean(page, where) {
  const hasAxe = await page.evaluate(() => 'axe' in window);
  if (!hasAxe) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    // @ts-expect-error injected by addScriptTag
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
    }));
  });
  assert.deepEqual(violations, [], `axe violations on ${where}:\n${JSON.stringify(violations, null, 2)}`);
}
