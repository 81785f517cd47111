// Browser tests of the quick prompt window (quick.html, 640×360) against the mock core, served
// with the production CSP; and of the main window's side of "Open in Hearth".
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  mockServer,
  openBrowser,
  screenshot,
  until,
} from './harness.mjs';

const require = createRequire(import.meta.url);
const AXE = require.resolve('axe-core/axe.min.js');

// The mock's answer is Markdown (a paragraph and a two-item list); its rendered text, whitespace collapsed:
const FULL_ANSWER = 'Good question. Here is a short plan: Start with what you already know. Take the next step and check how it went.';
const QUICK_VIEWPORT = { width: 640, height: 360 };

const server = mockServer();

const quickUrl = (scenario) => `${server.origin}/quick.html${scenario ? `?scenario=${scenario}` : ''}`;

async function session(t, options = {}) {
  const browser = await openBrowser({ viewport: QUICK_VIEWPORT, ...options });
  t.after(() => browser.close());
  return browser;
}

function assertNoProblems(problems) {
  assert.deepEqual(problems, [], 'no console errors/warnings, page errors, CSP violations or failed requests');
}

const input = (page) => page.getByRole('textbox', { name: 'Ask Hearth' });
const answerArea = (page) => page.getByRole('region', { name: 'Answer' });
const answerText = (page) => answerArea(page).locator('.text');

async function ipcCalls(page, cmd) {
  return page.evaluate((c) => window.__ipcCalls.filter((call) => call.cmd === c).map((call) => call.args), cmd);
}

/** Whitespace (including the no-break space after "You asked:") as single spaces. */
const flat = (text) => text?.replace(/\s+/g, ' ');

async function commands(page) {
  return page.evaluate(() => window.__ipcCalls.map((call) => call.cmd));
}

/** Open quick.html and wait until it knows whether chat is ready (the hint is shown). */
async function openQuick(page, scenario) {
  await page.goto(quickUrl(scenario));
  await input(page).waitFor();
  await until(page, () => window.__ipcCalls?.some((c) => c.cmd === 'chat_status'));
  await page.locator('#quick-hint').waitFor();
}

/** Record every distinct text the answer shows, from now on. */
async function watchAnswer(page) {
  await page.evaluate(() => {
    window.__answerTexts = [];
    const area = document.querySelector('[role="region"][aria-label="Answer"]');
    const record = () => {
      const text = area?.querySelector('.text')?.textContent ?? '';
      const seen = window.__answerTexts;
      if (seen[seen.length - 1] !== text) seen.push(text);
    };
    new MutationObserver(record).observe(area, { subtree: true, childList: true, characterData: true });
  });
}

async function ask(page, question) {
  await input(page).fill(question);
  await input(page).press('Enter');
}

describe('quick prompt: idle', () => {
  test('input focused on load with a one-line hint; "Open Hearth" shows main; Escape hides', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page);
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Ask Hearth');
    assert.equal(await input(page).getAttribute('placeholder'), 'Ask Hearth…');
    assert.equal(await page.title(), 'Ask Hearth');
    assert.equal(await page.locator('#quick-hint').innerText(), 'Ask anything — the answer appears here.');
    assert.equal(await input(page).getAttribute('aria-describedby'), 'quick-hint');

    // Enter with nothing typed does nothing.
    await input(page).press('Enter');
    await page.keyboard.press('Escape');
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'hide_quick_prompt'));

    await page.getByRole('button', { name: 'Open Hearth' }).click();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'show_main_window'));
    assert.deepEqual(await commands(page), ['chat_status', 'hide_quick_prompt', 'show_main_window']);
    assertNoProblems(problems);
  });

  test('no provider: the first sentence of the core hint plus the local server found (or "Open Hearth to set one up."); Enter sends nothing', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page, 'no-provider');
    const hint = 'No model provider is set up yet. Ollama is running on this computer — open Hearth to use it.';
    await until(page, (h) => document.querySelector('#quick-hint')?.textContent === h, hint);
    assert.deepEqual(await commands(page), ['chat_status', 'detect_local_servers']);

    await ask(page, 'What is on my calendar?');
    await until(page, (h) => document.querySelector('[role="status"]')?.textContent === h, hint);
    assert.equal(await page.locator('#quick-hint').innerText(), hint, 'the hint stays');
    assert.equal(await input(page).inputValue(), 'What is on my calendar?', 'the text is kept');
    assert.equal(await page.locator('#quick-hint.nudged').count(), 1);
    assert.equal(await answerArea(page).locator('.question').count(), 0, 'no question/answer shown');
    assert.deepEqual(await ipcCalls(page, 'send_message'), [], 'nothing is sent');
    assert.equal(await page.getByRole('button', { name: 'Open Hearth' }).count(), 1);

    // Nothing running any more: when the window is shown again, the hint says to open Hearth.
    await page.evaluate(() => {
      window.__hearthMock.setLocalServers([]);
      window.dispatchEvent(new Event('focus'));
    });
    await until(page, () => document.querySelector('#quick-hint')?.textContent === 'No model provider is set up yet. Open Hearth to set one up.');
    assertNoProblems(problems);
  });
});

describe('quick prompt: answers', () => {
  test('Enter streams the answer under the question and ends with "Open in Hearth", which opens the conversation', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page);
    await watchAnswer(page);
    await ask(page, 'How do I cook dried beans?');

    // The question shows at once (small, muted), the input is cleared, Stop is offered.
    const question = answerArea(page).locator('.question');
    await question.waitFor();
    assert.equal(flat(await question.textContent()), 'You asked: How do I cook dried beans?', 'labelled for screen readers');
    assert.equal(await input(page).inputValue(), '');
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    const [qColor, aColor] = await page.evaluate(() => [
      getComputedStyle(document.querySelector('.question')).color,
      getComputedStyle(document.body).color,
    ]);
    assert.notEqual(qColor, aColor, 'the question is muted');

    // Done: the whole answer, rendered as Markdown, and "Open in Hearth".
    const open = page.getByRole('button', { name: 'Open in Hearth' });
    await open.waitFor();
    assert.equal(flat(await answerText(page).textContent()).trim(), FULL_ANSWER);
    assert.equal(await answerText(page).locator('.markdown ol > li').count(), 2);
    assert.equal(await page.getByRole('button', { name: 'Stop' }).count(), 0);
    assert.equal(await page.getByText('Stopped', { exact: true }).count(), 0);
    const seen = await page.evaluate(() => window.__answerTexts.map((t) => t.replace(/\s+/g, ' ').trim()).filter(Boolean));
    assert.ok(seen.length >= 4, `the answer grew in pieces: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].startsWith(seen[i - 1]), 'each piece extends the last');

    const sends = await ipcCalls(page, 'send_message');
    assert.deepEqual(sends, [{ conversationId: null, text: 'How do I cook dried beans?', temporary: false }]);

    // "Open in Hearth" asks the core to show that conversation in the main window.
    await open.click();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'open_in_main'));
    const [openArgs] = await ipcCalls(page, 'open_in_main');
    assert.match(openArgs.conversationId, /^c-/);
    assert.deepEqual(Object.keys(openArgs), ['conversationId']);
    assert.equal(await commands(page).then((cmds) => cmds.includes('hide_quick_prompt')), false);

    // A follow-up starts a new question (not a continuation).
    await ask(page, 'And lentils?');
    await until(page, () => document.querySelector('.question')?.textContent?.replace(/\s+/g, ' ') === 'You asked: And lentils?');
    await open.waitFor();
    const followUp = await ipcCalls(page, 'send_message');
    assert.deepEqual(followUp[1], { conversationId: null, text: 'And lentils?', temporary: false });
    assertNoProblems(problems);
  });

  test('Escape while streaming stops (window stays), keeps the partial with "Stopped"; Escape again hides', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page);
    await page.evaluate(() => window.__hearthMock.setChatDelay(400));
    await ask(page, 'Tell me a long story');
    await until(page, () => (document.querySelector('[aria-label="Answer"] .text')?.textContent ?? '').length > 0);
    await page.keyboard.press('Escape');

    const stopped = page.getByText('Stopped', { exact: true });
    await stopped.waitFor();
    const partial = flat(await answerText(page).textContent()).trim();
    assert.ok(partial.length > 0 && partial.length < FULL_ANSWER.length, `partial answer: ${JSON.stringify(partial)}`);
    assert.ok(FULL_ANSWER.startsWith(partial));
    const stops = await ipcCalls(page, 'stop_turn');
    assert.equal(stops.length, 1);
    assert.equal(typeof stops[0].turnId, 'number');
    assert.deepEqual(await ipcCalls(page, 'hide_quick_prompt'), [], 'Escape during streaming does not hide');
    // A stopped answer was still saved, so it can be opened.
    await page.getByRole('button', { name: 'Open in Hearth' }).waitFor();

    await page.keyboard.press('Escape');
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'hide_quick_prompt'));
    assert.equal((await ipcCalls(page, 'stop_turn')).length, 1, 'no second stop');
    assertNoProblems(problems);
  });

  test('the Stop button stops the turn too', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page);
    await page.evaluate(() => window.__hearthMock.setChatDelay(400));
    await ask(page, 'Tell me a long story');
    await until(page, () => (document.querySelector('[aria-label="Answer"] .text')?.textContent ?? '').length > 0);
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped', { exact: true }).waitFor();
    assert.equal((await ipcCalls(page, 'stop_turn')).length, 1);
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Ask Hearth');
    assertNoProblems(problems);
  });

  test('a failed turn shows the error as an alert, with no "Open in Hearth"', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page, 'chat-fails');
    await ask(page, 'Hello?');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /Hearth couldn't answer/);
    assert.match(await alert.innerText(), /TestProvider rejected the request \(401\): check your API key for TestProvider/);
    assert.equal(flat(await answerArea(page).locator('.question').textContent()), 'You asked: Hello?');
    assert.equal(await page.getByRole('button', { name: 'Open in Hearth' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Stop' }).count(), 0);
    await page.keyboard.press('Escape');
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'hide_quick_prompt'));
    assertNoProblems(problems);
  });
});

describe('quick prompt: a provider asks Hearth to slow down', () => {
  test('the answer says it waits for the rate limit, then streams as usual', async (t) => {
    const { page, problems } = await session(t);
    await openQuick(page, 'rate-limited');
    await input(page).fill('Plan my week');
    await input(page).press('Enter');
    const waiting = answerArea(page).locator('[data-testid="rate-limit-wait"]');
    await waiting.waitFor();
    assert.equal(
      flat(await waiting.textContent()),
      'openai asked Hearth to slow down: waiting about 12 s for its rate limit. The answer follows by itself; Stop ends the wait.',
    );
    await answerText(page).waitFor();
    await until(page, () => document.querySelector('[data-testid="rate-limit-wait"]') === null);
    assertNoProblems(problems);
  });
});

describe('main window: open_conversation', () => {
  test('navigates to Chat with that conversation selected and its messages shown', async (t) => {
    const { page, problems } = await session(t, { viewport: { width: 1120, height: 760 } });
    await page.goto(`${server.origin}/index.html#/settings`);
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();

    await page.evaluate(() => window.__hearthMock.emit('open_conversation', { conversation_id: 'c-lisbon' }));
    await until(page, () => location.hash === '#/chat');
    const lisbon = page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Three days in Lisbon' });
    await until(page, () => document.querySelector('nav[aria-label="Conversations"] [aria-current="true"] .title')?.textContent === 'Three days in Lisbon');
    assert.equal(await lisbon.getAttribute('aria-current'), 'true');
    await page.getByText('Interrupted — the answer was cut off').waitFor();
    assert.equal(await page.getByRole('heading', { level: 2, name: 'Three days in Lisbon' }).count(), 1);
    assert.equal(await page.locator('[role="log"] article.user .text').textContent(), 'Plan three days in Lisbon for me.');
    assert.equal(
      await page.locator('nav[aria-label="Main"] [aria-current="page"]').innerText().then((s) => s.split('\n')[0].trim()),
      'Chat',
    );

    // Already on Chat: another request switches to that conversation.
    await page.evaluate(() => window.__hearthMock.emit('open_conversation', { conversation_id: 'c-recipes' }));
    await until(page, () => document.querySelector('nav[aria-label="Conversations"] [aria-current="true"] .title')?.textContent === 'Dinner with chickpeas');
    await page.getByText('A quick chana saag works well:', { exact: false }).waitFor();
    assert.deepEqual(
      await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'get_messages').map((c) => c.args)),
      [{ conversationId: 'c-lisbon' }, { conversationId: 'c-recipes' }],
    );
    assertNoProblems(problems);
  });
});

describe('quick prompt: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations with an answer shown (${colorScheme}); screenshot`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openQuick(page);
      await assertAxeClean(page, `quick idle (${colorScheme})`);
      await ask(page, 'How do I get better at something?');
      await page.getByRole('button', { name: 'Open in Hearth' }).waitFor();
      await assertAxeClean(page, `quick with an answer (${colorScheme})`);
      await input(page).focus();
      await screenshot(page, `quick-answer-${colorScheme}`);
      assertNoProblems(problems);
    });

    test(`axe finds no violations when stopped, failed and without a provider (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openQuick(page);
      await page.evaluate(() => window.__hearthMock.setChatDelay(300));
      await ask(page, 'Tell me a long story');
      await until(page, () => (document.querySelector('[aria-label="Answer"] .text')?.textContent ?? '').length > 0);
      await assertAxeClean(page, `quick streaming (${colorScheme})`);
      await page.keyboard.press('Escape');
      await page.getByText('Stopped', { exact: true }).waitFor();
      await assertAxeClean(page, `quick stopped (${colorScheme})`);
      await openQuick(page, 'chat-fails');
      await ask(page, 'Hello?');
      await page.getByRole('alert').waitFor();
      await assertAxeClean(page, `quick failed (${colorScheme})`);
      await openQuick(page, 'no-provider');
      await ask(page, 'Hello?');
      await assertAxeClean(page, `quick no-provider (${colorScheme})`);
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
