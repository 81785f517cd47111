// Spending caps and routing: Settings → Spending and routing (caps saved with set_budget, the
// router's switches with set_routing, where each cap stands), and Chat when a cap holds a
// message back (the three ways on; "Send this message anyway" sends it over the cap and the
// answer's notice says where the cap stands). Against the mock core with the production CSP.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, flat, ipcCalls, mockServer, screenshot, session, until } from './harness.mjs';

const server = mockServer();
const url = (hash, scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/${hash}`;
const composer = (page) => page.getByRole('textbox', { name: 'Message Hearth' });

describe('Settings → Spending and routing', () => {
  test('saves caps, shows where each stands, refuses a cap that is not an amount, and sets the router', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('settings'));
    const heading = page.getByRole('heading', { level: 2, name: 'Spending and routing' });
    await heading.waitFor();
    const section = page.locator('section[data-section="spending"]');
    const routing = section.getByRole('checkbox', { name: 'Send simple messages to the fast model' });
    const cascade = section.getByRole('checkbox', { name: /Check fast answers/ });
    assert.equal(await routing.isChecked(), true);
    assert.equal(await cascade.isChecked(), false);
    await cascade.check();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'set_routing' && c.args.cascade === true));
    // With routing off, the cascade cannot be turned on.
    await routing.uncheck();
    await until(page, () => document.querySelector('section[data-section="spending"] input[type="checkbox"]:disabled') !== null);
    const calls = await ipcCalls(page, 'set_routing');
    assert.deepEqual(calls.at(-1), { enabled: false, cascade: true });

    const overall = section.getByRole('group', { name: 'Spending caps' });
    assert.equal(await section.locator('[data-testid="standing"]').count(), 0);
    await overall.getByLabel('Per day').fill('lots');
    await overall.getByRole('button', { name: 'Save caps', exact: true }).click();
    assert.equal(
      flat(await overall.locator('.field-error').textContent()),
      'A cap is an amount in US dollars (0 to 1,000,000), or empty for none.',
    );
    await overall.getByLabel('Per day').fill('5');
    await overall.getByLabel('Per month').fill('60');
    await overall.getByRole('button', { name: 'Save caps', exact: true }).click();
    await section.locator('[data-testid="standing"]').nth(1).waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_budget'), [{ provider: null, dailyUsd: 5, monthlyUsd: 60 }]);
    assert.equal(
      flat(await section.locator('[data-testid="standing"]').first().textContent()),
      'You have spent $0.00 of your daily budget of $5.00 (0 %).',
    );
    // Emptied: no cap.
    await overall.getByLabel('Per month').fill('');
    await overall.getByRole('button', { name: 'Save caps', exact: true }).click();
    await until(page, () => document.querySelectorAll('[data-testid="standing"]').length === 1);
    assertNoProblems(problems);
  });

  test('caps for one provider: saved, listed with where they stand, and removed', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('settings'));
    const section = page.locator('section[data-section="spending"]');
    const one = section.getByRole('group', { name: 'Caps for one provider' });
    await one.waitFor();
    assert.equal(await one.getByLabel('Provider').inputValue(), 'local');
    await one.getByLabel('Per day').fill('-3');
    await one.getByRole('button', { name: 'Save caps for local' }).click();
    assert.match(flat(await one.locator('.field-error').textContent()), /^A cap is an amount in US dollars/);
    await one.getByLabel('Per day').fill('2');
    await one.getByRole('button', { name: 'Save caps for local' }).click();
    const listed = section.locator('[data-testid="provider-caps"]');
    await listed.waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_budget'), [{ provider: 'local', dailyUsd: 2, monthlyUsd: null }]);
    assert.equal(flat(await listed.locator('span').first().textContent()), 'local: $2.00 a day, no month cap');
    assert.equal(
      flat(await section.locator('[data-testid="standing"]').first().textContent()),
      'You have spent $0.00 of your daily budget for local of $2.00 (0 %).',
    );
    assert.equal(flat(await one.locator('.saved').textContent()), 'Caps for local saved.');
    // The overall caps are untouched.
    assert.equal(await section.getByRole('group', { name: 'Spending caps' }).getByLabel('Per day').inputValue(), '');
    await listed.getByRole('button', { name: 'Remove the caps for local' }).click();
    await until(page, () => document.querySelector('[data-testid="provider-caps"]') === null);
    assert.deepEqual((await ipcCalls(page, 'set_budget')).at(-1), { provider: 'local', dailyUsd: null, monthlyUsd: null });
    assert.equal(await one.getByLabel('Per day').inputValue(), '');
    assertNoProblems(problems);
  });

  for (const colorScheme of ['light', 'dark']) {
    test(`is accessible (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('settings', 'over-budget'));
      const section = page.locator('section[data-section="spending"]');
      await section.locator('[data-testid="standing"]').first().waitFor();
      const one = section.getByRole('group', { name: 'Caps for one provider' });
      await one.getByLabel('Per month').fill('20');
      await one.getByRole('button', { name: /^Save caps for / }).click();
      await section.locator('[data-testid="provider-caps"]').waitFor();
      await section.scrollIntoViewIfNeeded();
      await assertAxeClean(page);
      await screenshot(page, `settings-spending-${colorScheme}`);
      assertNoProblems(problems);
    });
  }
});

describe('Chat over a spending cap', () => {
  test('a held-back message offers three ways on; "Send this message anyway" sends it and says where the cap stands', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', 'over-budget'));
    await composer(page).waitFor();
    await composer(page).fill('What should I cook tonight?');
    await composer(page).press('Enter');
    const alert = page.getByRole('alert').filter({ hasText: 'This message would go over your budget' });
    await alert.waitFor();
    assert.match(flat(await alert.textContent()), /would cross your daily budget \(\$4\.98 of \$5\.00 spent/);
    // Nothing was stored: the question is not in the log, and its words are back in the composer.
    assert.equal(await page.locator('[role="log"] article').count(), 0);
    assert.equal(await composer(page).inputValue(), 'What should I cook tonight?');
    const ways = alert.getByRole('group', { name: 'Ways on' });
    assert.deepEqual(
      (await ways.locator('button, a').allTextContents()).map(flat),
      ['Send this message anyway', 'Use a local model…', 'Raise the cap…'],
    );
    await screenshot(page, 'chat-over-budget');

    await ways.getByRole('button', { name: 'Send this message anyway' }).click();
    await page.locator('[role="log"] article.assistant .usage').waitFor();
    const sent = await ipcCalls(page, 'send_message');
    assert.deepEqual(sent, [
      { conversationId: null, text: 'What should I cook tonight?', temporary: false },
      { conversationId: null, text: 'What should I cook tonight?', temporary: false, overBudget: true },
    ]);
    assert.equal(await composer(page).inputValue(), '');
    assert.equal(await alert.count(), 0);
    await page.getByText('You have spent $5.02 of your daily budget of $5.00 (100 %).').waitFor();

    // "Raise the cap…" opens Settings at the caps.
    await composer(page).fill('And dessert?');
    await composer(page).press('Enter');
    await alert.waitFor();
    await ways.getByRole('link', { name: 'Raise the cap…' }).click();
    await until(page, () => document.activeElement?.id === 'spending-title');
    assertNoProblems(problems);
  });
});

describe('Chat: the model for one message', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`the composer's Model menu sends the chosen model once, the answer says so, then it is Auto again (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('chat', 'cascade'));
      await composer(page).waitFor();
      const menu = page.getByRole('combobox', { name: 'Model' });
      assert.equal(await menu.inputValue(), 'auto');
      assert.deepEqual(
        (await menu.locator('option').allTextContents()).map(flat),
        ['Auto', 'Fast · llama3.2:1b', 'Main · llama3.2'],
      );
      await menu.selectOption('fast');
      await composer(page).fill('How many km is 5 miles?');
      await composer(page).press('Enter');
      const last = page.locator('[role="log"] article.assistant').last();
      await last.locator('.usage').waitFor();
      assert.equal((await ipcCalls(page, 'send_message')).at(-1).tier, 'fast');
      assert.match(await last.locator('.usage').innerText(), /^llama3\.2:1b \(fast — you chose it for this message\) · /);
      // No cascade for a model the user chose (no "Improved by"), and no fallback notice.
      assert.equal(await last.locator('[data-testid="improved"]').count(), 0);
      assert.ok(!flat(await last.innerText()).includes('fallback'));
      assert.equal(await menu.inputValue(), 'auto', 'the choice was for that message only');
      await assertAxeClean(page, 'the composer with its Model menu');
      await screenshot(page, `chat-composer-model-${colorScheme}`, { fullPage: false });
      // The next message goes to the router (no tier sent).
      await composer(page).fill('Thanks');
      await composer(page).press('Enter');
      await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'send_message').length === 2);
      assert.equal((await ipcCalls(page, 'send_message')).at(-1).tier, undefined);
      assertNoProblems(problems);
    });
  }

  test('with one model there is no choice to make', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat'));
    await composer(page).waitFor();
    assert.equal(await page.getByRole('combobox', { name: 'Model' }).count(), 0);
    assertNoProblems(problems);
  });
});

describe('Chat: an answer from the semantic cache', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`says which saved question it answered, and "Ask the model instead" asks the model (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('chat', 'saved-reply'));
      await composer(page).waitFor();
      await composer(page).fill('how many kilometres is 5 miles');
      await composer(page).press('Enter');
      const last = page.locator('[role="log"] article.assistant').last();
      const saved = last.locator('[data-testid="saved-reply"]');
      await saved.waitFor();
      assert.equal(flat(await saved.locator('p').textContent()), 'Answered from a saved reply to: “How many kilometres is 5 miles?”');
      assert.match(await last.locator('.usage').innerText(), /^saved reply from llama3\.2 \(no model was called\)$/);
      await assertAxeClean(page, 'an answer from a saved reply');
      await screenshot(page, `chat-saved-reply-${colorScheme}`, { fullPage: false });
      await saved.getByRole('button', { name: 'Ask the model instead' }).click();
      await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'regenerate'));
      await until(page, () => {
        const answers = document.querySelectorAll('[role="log"] article.assistant');
        const answer = answers[answers.length - 1];
        return answer?.querySelector('.usage') !== null && answer?.querySelector('[data-testid="saved-reply"]') === null;
      });
      assert.match(await last.locator('.usage').innerText(), /tokens in/);
      assertNoProblems(problems);
    });
  }
});

describe('Chat: a provider asks Hearth to slow down', () => {
  test('the answer says it waits for the rate limit, then streams as usual', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', 'rate-limited'));
    await composer(page).waitFor();
    await composer(page).fill('Plan my week');
    await composer(page).press('Enter');
    const last = page.locator('[role="log"] article.assistant').last();
    const waiting = last.locator('[data-testid="rate-limit-wait"]');
    await waiting.waitFor();
    assert.equal(
      flat(await waiting.textContent()),
      'openai asked Hearth to slow down: waiting about 12 s for its rate limit. The answer follows by itself; Stop ends the wait.',
    );
    await last.locator('.usage').waitFor();
    assert.equal(await waiting.count(), 0, 'gone once the answer came');
    assertNoProblems(problems);
  });
});
