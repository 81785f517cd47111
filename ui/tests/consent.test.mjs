// Browser tests of the consent window (consent.html, 620×640) against the mock core, served
// with the production CSP: what a question shows (the exact call, a coloured diff, the
// escalation), that Deny has the focus, the keyboard answers, that hostile argument text
// stays text, and that only this window may answer (the mock refuses other windows, as the
// shell does).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, mockServer, openBrowser, screenshot, until } from './harness.mjs';

const VIEWPORT = { width: 620, height: 640 };

const server = mockServer();
const consentUrl = (scenario) => `${server.origin}/consent.html${scenario ? `?scenario=${scenario}` : ''}`;

async function session(t, options = {}) {
  const browser = await openBrowser({ viewport: VIEWPORT, ...options });
  t.after(() => browser.close());
  return browser;
}

const answers = (page) => page.evaluate(() => window.__hearthMock.consentAnswers());

describe('consent window', () => {
  test('a destructive overwrite shows the exact call and a coloured diff; Deny has the focus; Escape denies', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(consentUrl('consent-diff'));
    const dialog = page.getByRole('alertdialog', { name: 'Allow overwrite_file?' });
    await dialog.waitFor();
    assert.equal(await page.getByTestId('risk').textContent(), 'Cannot be undone');
    assert.equal(await page.getByTestId('origin').textContent(), 'Hearth (built in)');
    assert.match(await page.getByTestId('arguments').textContent(), /"path": "\/home\/ada\/Notes\/plan\.md"/);
    // The diff's lines, each coloured by kind.
    assert.equal(await page.locator('.preview .line-add').textContent(), '+- ship the beta');
    assert.equal(await page.locator('.preview .line-del').textContent(), '-- ship the alpha');
    assert.match(await page.locator('.preview .line-meta').textContent(), /^content hash: sha256:/);
    // A destructive call offers neither "this conversation" (nor "this chat") nor "always".
    assert.equal(await page.getByRole('button', { name: /Always allow/ }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Allow for this/ }).count(), 0);
    assert.equal(await page.getByTestId('keys').textContent(), 'Esc or Alt+D deny · Alt+O allow once');
    // The safe answer has the focus.
    await until(page, () => document.activeElement?.textContent?.trim() === 'Deny');
    // Alt+C and Alt+A do nothing here: neither is offered (the only answer sent is the deny below).
    await page.keyboard.press('Alt+c');
    await page.keyboard.press('Alt+a');
    const file = await screenshot(page, 'consent-overwrite-diff');
    assert.ok(file);
    await page.getByRole('textbox', { name: /Reason for denying/ }).fill('not that file');
    await page.keyboard.press('Escape');
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    assert.deepEqual(await answers(page), [{ id: 1, tool: 'overwrite_file', choice: 'deny', reason: 'not that file' }]);
    assert.deepEqual(problems, []);
  });

  test('an escalated write says what came before it; hostile argument text stays text; Alt+C allows for the conversation', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(consentUrl('consent-escalated'));
    await page.getByRole('alertdialog', { name: 'Allow create_file?' }).waitFor();
    assert.match(await page.getByTestId('escalated').textContent(), /the output of read_file on notes\.txt/);
    // The markup in the arguments is shown, never rendered.
    assert.equal(await page.locator('.request img').count(), 0);
    assert.match(await page.getByTestId('arguments').textContent(), /<img src=x onerror=alert\(1\)>/);
    // A saved chat's write offers both lasting answers.
    assert.equal(await page.getByRole('button', { name: 'Always allow create_file' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Allow for this conversation' }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Allow for this chat' }).count(), 0);
    assert.equal(
      await page.getByTestId('keys').textContent(),
      'Esc or Alt+D deny · Alt+O allow once · Alt+C this conversation · Alt+A always',
    );
    await until(page, () => document.activeElement?.textContent?.trim() === 'Deny');
    await page.keyboard.press('Alt+c');
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    assert.deepEqual(await answers(page), [{ id: 1, tool: 'create_file', choice: 'conversation', reason: null }]);
    assert.deepEqual(problems, []);
  });

  test('a temporary chat\'s write offers "Allow for this chat" and no "Always"; Alt+C answers for the chat; Deny has the focus', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(consentUrl('consent-temporary'));
    await page.getByRole('alertdialog', { name: 'Allow create_file?' }).waitFor();
    await until(page, () => document.activeElement?.textContent?.trim() === 'Deny');
    const forChat = page.getByRole('button', { name: 'Allow for this chat' });
    assert.equal(await forChat.count(), 1);
    assert.equal(await forChat.getAttribute('aria-keyshortcuts'), 'Alt+C');
    assert.equal(await page.getByRole('button', { name: /Always allow/ }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Allow for this conversation' }).count(), 0);
    assert.equal(await page.getByTestId('keys').textContent(), 'Esc or Alt+D deny · Alt+O allow once · Alt+C this chat');
    // "Always" is not offered: Alt+A does nothing (the only answer sent is Alt+C's).
    await page.keyboard.press('Alt+a');
    await page.keyboard.press('Alt+c');
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    assert.deepEqual(await answers(page), [{ id: 1, tool: 'create_file', choice: 'conversation', reason: null }]);
    const sent = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'answer_consent').map((c) => c.args));
    assert.deepEqual(sent, [{ id: 1, hash: 'temporary_request-digest', choice: 'conversation', reason: null }]);
    assert.deepEqual(problems, []);
  });

  test('questions arriving one after another are answered in order; Tab stays in the window', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(consentUrl());
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    await page.evaluate(() => {
      const base = { origin: 'built_in', preview: null, escalated_by: null };
      window.__hearthMock.askConsent({ ...base, call_id: 'a', tool: 'delete_file', risk: 'destructive', arguments: '{"path": "a.txt"}', reason: 'destructive calls always ask', offers_always: false, offers_conversation: false });
      window.__hearthMock.askConsent({ ...base, call_id: 'b', tool: 'create_file', risk: 'write', arguments: '{"path": "b.txt"}', reason: 'it changes files', offers_always: true, offers_conversation: true });
    });
    await page.getByRole('alertdialog', { name: 'Allow delete_file?' }).waitFor();
    assert.equal(await page.locator('.count').textContent(), '1 of 2');
    // Tab from the last control wraps to the first.
    const buttons = page.locator('main button, main input, main [tabindex="0"]');
    const count = await buttons.count();
    await buttons.nth(count - 1).focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement === document.querySelector('main [tabindex="0"], main button, main input')), true);
    await page.getByRole('button', { name: 'Allow once' }).click();
    await page.getByRole('alertdialog', { name: 'Allow create_file?' }).waitFor();
    // The next question settles before it can be allowed.
    await page.locator('button:has-text("Allow once"):not([disabled])').waitFor();
    await page.keyboard.press('Alt+o');
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    assert.deepEqual(
      (await answers(page)).map((a) => [a.tool, a.choice]),
      [
        ['delete_file', 'once'],
        ['create_file', 'once'],
      ],
    );
    assert.deepEqual(problems, []);
  });

  test('a question that replaces the one shown cannot be allowed by a click or a key meant for the old one', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(consentUrl());
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    const base = { origin: 'built_in', preview: null, escalated_by: null, offers_always: false, offers_conversation: false };
    const first = await page.evaluate(
      (base) => window.__hearthMock.askConsent({ ...base, call_id: 'a', hash: 'ha', tool: 'read_file', risk: 'read', arguments: '{"path": "notes.txt"}', reason: 'it reads outside the usual places' }),
      base,
    );
    await page.getByRole('alertdialog', { name: 'Allow read_file?' }).waitFor();
    await page.locator('button:has-text("Allow once"):not([disabled])').waitFor();
    // The user reaches for Allow once; the question times out and a delete takes its place
    // under the pointer. In the same task as it appears: the button is off and Alt+O (and a
    // held key's repeat) answers nothing.
    const atSwap = await page.evaluate(
      async ({ base, first }) => {
        window.__hearthMock.withdrawConsent(first);
        window.__hearthMock.askConsent({ ...base, call_id: 'b', hash: 'hb', tool: 'delete_file', risk: 'destructive', arguments: '{"path": "taxes-2025.pdf"}', reason: 'destructive calls always ask' });
        const shown = () => document.getElementById('consent-title')?.textContent?.includes('delete_file');
        while (!shown()) await new Promise((r) => requestAnimationFrame(r));
        const allow = [...document.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Allow once');
        const disabled = allow?.disabled ?? null;
        allow?.click();
        window.dispatchEvent(new KeyboardEvent('keydown', { key: 'o', altKey: true, bubbles: true }));
        window.dispatchEvent(new KeyboardEvent('keydown', { key: 'o', altKey: true, repeat: true, bubbles: true }));
        await new Promise((r) => setTimeout(r, 100));
        return { disabled, answered: window.__hearthMock.consentAnswers().length };
      },
      { base, first },
    );
    assert.deepEqual(atSwap, { disabled: true, answered: 0 });
    await page.getByRole('alertdialog', { name: 'Allow delete_file?' }).waitFor();
    // Deny never waits; Allow works once the question has settled (half a second).
    await page.locator('button:has-text("Allow once"):not([disabled])').waitFor();
    await page.keyboard.press('Alt+o');
    await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
    assert.deepEqual(
      (await answers(page)).map((a) => [a.tool, a.choice]),
      [['delete_file', 'once']],
    );
    assert.deepEqual(problems, []);
  });

  test('a held Alt+O does not allow by its repeats', async (t) => {
    const { page } = await session(t);
    await page.goto(consentUrl('consent-diff'));
    await page.getByRole('alertdialog', { name: 'Allow overwrite_file?' }).waitFor();
    await page.locator('button:has-text("Allow once"):not([disabled])').waitFor();
    await page.evaluate(() =>
      window.dispatchEvent(new KeyboardEvent('keydown', { key: 'o', altKey: true, repeat: true, bubbles: true })),
    );
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await answers(page), []);
    await page.getByRole('alertdialog', { name: 'Allow overwrite_file?' }).waitFor();
  });

  for (const colorScheme of ['light', 'dark']) {
    test(`no accessibility violations (${colorScheme})`, async (t) => {
      const { page } = await session(t, { colorScheme, bypassCSP: true });
      for (const scenario of ['consent-diff', 'consent-escalated', 'consent-temporary']) {
        await page.goto(consentUrl(scenario));
        await page.getByRole('alertdialog').waitFor();
        await assertAxeClean(page, `consent ${scenario} (${colorScheme})`);
      }
      await page.goto(consentUrl());
      await page.getByRole('heading', { name: 'Nothing is waiting for you' }).waitFor();
      await assertAxeClean(page, `consent idle (${colorScheme})`);
    });
  }

  test('another window cannot answer: the core refuses it', async (t) => {
    const { page } = await session(t);
    await page.goto(`${server.origin}/index.html?scenario=ok`);
    await until(page, () => window.__hearthMock !== undefined);
    const refused = await page.evaluate(async () => {
      const { invoke } = window.__TAURI_INTERNALS__;
      try {
        await invoke('answer_consent', { id: 1, hash: 'x', choice: 'once', reason: null });
        return null;
      } catch (e) {
        return e.code;
      }
    });
    assert.equal(refused, 'forbidden');
  });
});
