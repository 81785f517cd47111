// Reworking the last turn (Regenerate, Edit & resend) and the context inspector, against the
// mock core (dist-mock/) with the production CSP.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertAxeClean,
  assertNoProblems,
  flat,
  ipcCalls,
  mockServer,
  screenshot,
  session,
  until,
} from './harness.mjs';

const FULL_ANSWER = 'Good question. Here is a short plan: Start with what you already know. Take the next step and check how it went.';
const REGENERATED = 'Another way to look at it: Pick one small step. Do it today. Look back tomorrow and adjust.';
const RECIPE_QUESTION = 'What can I cook tonight with chickpeas and spinach?';

const server = mockServer();

const url = (scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/chat`;

const composer = (page) => page.getByRole('textbox', { name: 'Message Hearth' });
const log = (page) => page.getByRole('log');
const answers = (page) => page.locator('[role="log"] article.assistant');
const users = (page) => page.locator('[role="log"] article.user');
const lastAnswer = (page) => answers(page).last();
const contextToggle = (page) => page.getByRole('button', { name: 'Context', exact: true });
const panel = (page) => page.getByRole('region', { name: 'Context' });

async function openConversation(page, title, scenario) {
  await page.goto(url(scenario));
  await composer(page).waitFor();
  await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: title }).click();
  await lastAnswer(page).locator('.text').waitFor();
}

/** The Tokens cell of a zone row in the context panel. */
async function zone(page, key) {
  return flat(await panel(page).locator(`tr[data-zone="${key}"] td`).textContent());
}

describe('Regenerate', () => {
  test('replaces the last answer with a new streamed one and reloads the conversation', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Dinner with chickpeas');
    await page.evaluate(() => window.__hearthMock.setChatDelay(200));
    assert.match(flat(await lastAnswer(page).textContent()), /A quick chana saag works well/);
    const regenerate = lastAnswer(page).getByRole('button', { name: 'Regenerate' });
    await regenerate.click();

    // The old answer is gone at once; the new one streams in its place.
    await until(page, () => !document.querySelector('[role="log"]')?.textContent?.includes('chana saag'));
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Regenerate' }).count(), 0, 'not offered while streaming');
    assert.equal(await answers(page).count(), 1);
    await lastAnswer(page).locator('.usage').waitFor();
    assert.equal(flat(await lastAnswer(page).locator('.text').textContent()), REGENERATED);
    assert.equal(await lastAnswer(page).locator('.markdown ul > li').count(), 3);
    assert.deepEqual(await ipcCalls(page, 'regenerate'), [{ conversationId: 'c-recipes' }]);
    assert.deepEqual(await ipcCalls(page, 'send_message'), []);

    // After chat_done the messages are read again from the core: still one question, one answer.
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'get_messages').length === 2);
    assert.deepEqual(await ipcCalls(page, 'get_messages'), [{ conversationId: 'c-recipes' }, { conversationId: 'c-recipes' }]);
    await until(page, () => Boolean(document.querySelector('[role="log"] article.assistant[data-message-id]')));
    assert.equal(await users(page).count(), 1);
    assert.equal(await answers(page).count(), 1);
    assert.equal(flat(await lastAnswer(page).locator('.text').textContent()), REGENERATED);
    assert.match(await lastAnswer(page).locator('.usage').innerText(), /^llama3\.2 · [\d,]+ tokens in · [\d,]+ out · free \(local\)$/);
    await lastAnswer(page).getByRole('button', { name: 'Regenerate' }).waitFor();
    assertNoProblems(problems);
  });

  test('is offered for a stopped or interrupted last answer, only on the last one, and not in a temporary chat', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Three days in Lisbon');
    await page.getByText('Interrupted — the answer was cut off').waitFor();
    assert.equal(await lastAnswer(page).getByRole('button', { name: 'Regenerate' }).count(), 1);

    // Stop a new answer: it can be regenerated; the earlier one no longer offers it.
    await page.evaluate(() => window.__hearthMock.setChatDelay(400));
    await composer(page).fill('Tell me more');
    await composer(page).press('Enter');
    await until(page, () => (document.querySelector('[role="log"] article.assistant:last-of-type .text')?.textContent ?? '').length > 0);
    await page.getByRole('button', { name: 'Stop' }).click();
    await lastAnswer(page).locator('.badge').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Regenerate' }).count(), 1);
    assert.equal(await lastAnswer(page).getByRole('button', { name: 'Regenerate' }).count(), 1);

    // Temporary chats aren't stored: nothing to regenerate or edit.
    await page.getByRole('switch', { name: 'Temporary chat' }).check();
    await page.evaluate(() => window.__hearthMock.setChatDelay(20));
    await composer(page).fill('Just between us');
    await composer(page).press('Enter');
    await lastAnswer(page).locator('.usage').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Regenerate' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Edit your last message' }).count(), 0);
    assertNoProblems(problems);
  });
});

describe('Regenerate after a failure', () => {
  test('a failed Regenerate says so and offers to regenerate again', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Dinner with chickpeas');
    await page.evaluate(() => window.__hearthMock.failNextTurn());
    await lastAnswer(page).getByRole('button', { name: 'Regenerate' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(flat(await alert.textContent()), /Hearth couldn't answer.*TestProvider rejected the request \(401\)/);
    assert.equal(await answers(page).count(), 0, 'the old answer is gone (the core dropped it)');
    await alert.getByRole('button', { name: 'Regenerate' }).click();
    await alert.waitFor({ state: 'detached' });
    await lastAnswer(page).locator('.usage').waitFor();
    assert.equal(flat(await lastAnswer(page).locator('.text').textContent()), REGENERATED);
    assert.deepEqual(await ipcCalls(page, 'regenerate'), [{ conversationId: 'c-recipes' }, { conversationId: 'c-recipes' }]);
    assertNoProblems(problems);
  });
});

describe('Edit and resend', () => {
  test('Escape cancels; Ctrl+Enter resends the edited message and replaces the answer', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Dinner with chickpeas');
    const edit = page.getByRole('button', { name: 'Edit your last message' });
    await edit.click();
    const box = page.getByRole('textbox', { name: 'Your message' });
    await until(page, () => document.activeElement?.matches('form[aria-label="Edit your message"] textarea'));
    assert.equal(await box.inputValue(), RECIPE_QUESTION);

    // Escape: nothing changes, focus returns to Edit.
    await box.fill('Something else entirely');
    await page.keyboard.press('Escape');
    await box.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.textContent?.includes('Edit'));
    assert.equal(await users(page).locator('.text').textContent(), RECIPE_QUESTION);
    assert.deepEqual(await ipcCalls(page, 'edit_last_message'), []);

    // Edit again; Save & resend is off until the text changes.
    await edit.click();
    const save = page.getByRole('button', { name: 'Save & resend' });
    assert.ok(await save.isDisabled());
    await box.fill('What can I cook with lentils?');
    assert.ok(await save.isEnabled());
    await box.press('Control+Enter');
    await box.waitFor({ state: 'detached' });
    await until(page, () => document.querySelector('[role="log"] article.user .text')?.textContent === 'What can I cook with lentils?');
    await until(page, () => !document.querySelector('[role="log"]')?.textContent?.includes('chana saag'));
    await lastAnswer(page).locator('.usage').waitFor();
    assert.equal(flat(await lastAnswer(page).locator('.text').textContent()), FULL_ANSWER);
    assert.deepEqual(await ipcCalls(page, 'edit_last_message'), [
      { conversationId: 'c-recipes', text: 'What can I cook with lentils?' },
    ]);
    // Reloaded from the core: the edited question and its new answer, nothing else.
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'get_messages').length === 2);
    await until(page, () => Boolean(document.querySelector('[role="log"] article.assistant[data-message-id]')));
    assert.equal(await users(page).count(), 1);
    assert.equal(await answers(page).count(), 1);
    assert.equal(await users(page).locator('.text').textContent(), 'What can I cook with lentils?');
    assertNoProblems(problems);
  });

  test('only the last user message can be edited, with the Save & resend button too', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Dinner with chickpeas');
    await page.evaluate(() => window.__hearthMock.setChatDelay(20));
    await composer(page).fill('And for dessert?');
    await composer(page).press('Enter');
    await until(page, () => document.querySelectorAll('[role="log"] .usage').length === 2);
    assert.equal(await page.getByRole('button', { name: 'Edit your last message' }).count(), 1);
    assert.equal(await users(page).last().getByRole('button', { name: 'Edit your last message' }).count(), 1);

    await page.getByRole('button', { name: 'Edit your last message' }).click();
    await page.getByRole('textbox', { name: 'Your message' }).fill('And for breakfast?');
    await page.getByRole('button', { name: 'Save & resend' }).click();
    await until(page, () => document.querySelectorAll('[role="log"] article.user .text')[1]?.textContent === 'And for breakfast?');
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'get_messages').length === 2);
    await until(page, () => document.querySelectorAll('[role="log"] article').length === 4);
    assert.deepEqual(await ipcCalls(page, 'edit_last_message'), [{ conversationId: 'c-recipes', text: 'And for breakfast?' }]);
    assert.equal(await users(page).first().locator('.text').textContent(), RECIPE_QUESTION, 'the first question is untouched');
    assertNoProblems(problems);
  });
});

describe('Context inspector', () => {
  test('the Context button opens a panel with the latest answer\'s zones; Escape closes it', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Dinner with chickpeas');
    const toggle = contextToggle(page);
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.equal(await toggle.getAttribute('aria-controls'), 'context-panel');
    await panel(page).waitFor();
    assert.match(flat(await panel(page).textContent()), /Latest answer llama3\.2/);
    assert.equal(flat(await panel(page).locator('[data-testid="context-usage"]').textContent()), '826 of 126,976 input tokens used (less than 1% of the budget)');
    assert.equal(await zone(page, 'system'), '812');
    assert.equal(await zone(page, 'tools'), '0 none offered', 'an answer from before tools: no tools zone');
    assert.equal(await zone(page, 'memory'), '0 nothing yet');
    assert.equal(await zone(page, 'summary'), '0 not needed yet');
    assert.equal(await zone(page, 'history'), '0 none');
    assert.equal(await zone(page, 'retrieved'), '0 none');
    assert.equal(await zone(page, 'current'), '14');
    assert.equal(await zone(page, 'output_reserve'), '4,096');
    assert.equal(await zone(page, 'input_budget'), '126,976');
    assert.equal(await zone(page, 'window'), '131,072');
    assert.equal(await panel(page).locator('[data-testid="context-dropped"]').count(), 0);
    // Table semantics: column and row headers.
    assert.deepEqual(await panel(page).locator('thead th').allTextContents(), ['Zone', 'Tokens']);
    assert.equal(await panel(page).locator('tbody th[scope="row"]').count(), 8);
    // The answer it describes is marked in the log.
    assert.equal(await page.locator('[role="log"] article.assistant.selected').count(), 1);

    await panel(page).getByRole('button', { name: 'Close the context panel' }).focus();
    await page.keyboard.press('Escape');
    await panel(page).waitFor({ state: 'detached' });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await until(page, () => document.activeElement?.textContent?.trim() === 'Context');
    assertNoProblems(problems);
  });

  test('"Context" on an answer shows that answer: every zone, the dropped messages; a new answer updates "latest"', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'Sorting a list in Python', 'markdown');
    await lastAnswer(page).getByRole('button', { name: 'Context of this answer' }).click();
    await panel(page).waitFor();
    await until(page, () => document.activeElement?.id === 'context-title');
    assert.equal(await zone(page, 'system'), '812');
    assert.equal(await zone(page, 'memory'), '146');
    assert.equal(await zone(page, 'summary'), '420');
    assert.equal(await zone(page, 'history'), '434');
    assert.equal(await zone(page, 'current'), '18');
    assert.equal(await zone(page, 'used'), '1,830');
    assert.equal(await zone(page, 'input_budget'), '123,904');
    assert.equal(await zone(page, 'window'), '128,000');
    assert.equal(
      flat(await panel(page).locator('[data-testid="context-dropped"]').textContent()),
      '3 earlier messages left out to fit (the summary covers them).',
    );
    assert.equal(flat(await panel(page).locator('[data-testid="context-usage"]').textContent()), '1,830 of 123,904 input tokens used (1% of the budget)');
    assert.equal(await lastAnswer(page).getByRole('button', { name: 'Context of this answer' }).getAttribute('aria-pressed'), 'true');

    // A new answer in this conversation: the panel follows the latest answer.
    await page.evaluate(() => window.__hearthMock.setChatDelay(20));
    await composer(page).fill('Thanks!');
    await composer(page).press('Enter');
    await until(page, () => document.querySelectorAll('[role="log"] .usage').length === 2);
    await until(page, () => document.querySelector('tr[data-zone="history"] td')?.textContent?.trim() !== '434');
    assert.equal(await page.locator('[role="log"] article.assistant.selected').count(), 1);
    assert.equal(await lastAnswer(page).getAttribute('class').then((c) => c.includes('selected')), true);
    assert.match(flat(await panel(page).textContent()), /Latest answer llama3\.2/);
    assert.equal(await zone(page, 'memory'), '0 nothing yet');
    assertNoProblems(problems);
  });
});

describe('Turns and context: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations with the editor and the context panel open (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openConversation(page, 'Sorting a list in Python', 'markdown');
      await contextToggle(page).click();
      await panel(page).waitFor();
      await page.mouse.move(5, 5);
      await assertAxeClean(page, `context panel (${colorScheme})`);
      await screenshot(page, `chat-context-${colorScheme}`);
      await page.getByRole('button', { name: 'Edit your last message' }).click();
      await page.getByRole('textbox', { name: 'Your message' }).waitFor();
      await assertAxeClean(page, `inline editor (${colorScheme})`);
      await screenshot(page, `chat-edit-${colorScheme}`);
      // Wide window: the panel is a column beside the conversation.
      await page.setViewportSize({ width: 1500, height: 800 });
      await assertAxeClean(page, `context panel, wide (${colorScheme})`);
      await screenshot(page, `chat-context-wide-${colorScheme}`);
      assert.ok(await log(page).isVisible());
      assertNoProblems(problems);
    });
  }
});
