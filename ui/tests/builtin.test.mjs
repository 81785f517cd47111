// The built-in model: the first-run choice with its download inline, and Settings → Built-in
// models. Against the mock core (dist-mock/) with the production CSP.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, flat, ipcCalls, mockServer, screenshot, session, until } from './harness.mjs';

const server = mockServer();

const url = (hash, params = {}) => {
  const query = new URLSearchParams(params).toString();
  return `${server.origin}/index.html${query ? `?${query}` : ''}#/${hash}`;
};

const choice = (page) => page.locator('[data-testid="builtin-choice"]');
const progressText = (page) => page.locator('[data-testid="builtin-progress-text"]');
const composer = (page) => page.getByRole('textbox', { name: 'Message Hearth' });

async function firstRun(page, params = {}) {
  await page.goto(url('chat', { scenario: 'no-provider', ...params }));
  await page.getByRole('heading', { name: 'Choose a model to start chatting' }).waitFor();
  await choice(page).waitFor();
}

describe('First run: a built-in model', () => {
  test('comes first with the recommended model, its size and memory; one click downloads it with progress, then it answers', async (t) => {
    const { page, problems } = await session(t);
    await firstRun(page);
    // It is the first choice, above the local servers.
    const order = await page.$$eval('.first-run > *', (els) => els.map((e) => e.getAttribute('data-testid') ?? e.className));
    assert.ok(order.indexOf('builtin-choice') < order.findIndex((c) => c.includes('found')), order.join(', '));
    assert.equal(await choice(page).getAttribute('data-model'), 'qwen2.5-7b', 'a 16 GB computer gets the 7B model');
    assert.match(
      flat(await choice(page).textContent()),
      /^Use a built-in model — Qwen2\.5 7B Instruct, 4\.6 GB Runs on this computer; nothing you say leaves it\. It needs about 5\.4 GB of memory while it answers\./,
    );
    await screenshot(page, 'first-run-builtin-choice');

    await page.evaluate(() => window.__hearthMock.holdBuiltin());
    await page.getByRole('button', { name: 'Download and use' }).click();
    const bar = page.getByRole('progressbar', { name: 'Downloading Qwen2.5 7B Instruct' });
    await bar.waitFor();
    await page.evaluate(() => window.__hearthMock.stepBuiltin(3));
    await until(page, () => document.querySelector('[data-testid="builtin-progress-text"]')?.textContent?.includes('of 4.6 GB'));
    await until(page, () => document.querySelector('[data-testid="builtin-progress-text"]')?.textContent?.includes('left'));
    assert.match(flat(await progressText(page).textContent()), /^1\.4 GB of 4\.6 GB · 12 MB\/s · about \d+ min left$/);
    assert.equal(Number(await bar.getAttribute('aria-valuenow')), Math.round((4683 * 1024 * 1024 * 3) / 10));
    // While it downloads there is no second download to start, only Cancel.
    assert.equal(await page.getByRole('button', { name: 'Download and use' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Cancel' }).count(), 1);
    await screenshot(page, 'first-run-builtin-downloading');

    await page.evaluate(() => window.__hearthMock.releaseBuiltin());
    await composer(page).waitFor();
    assert.deepEqual(await ipcCalls(page, 'download_builtin_model'), [{ name: 'qwen2.5-7b' }]);
    assert.equal(flat(await page.locator('.pane-head .model').textContent()), 'qwen2.5-7b · builtin');
    await composer(page).fill('Hello!');
    await page.keyboard.press('Enter');
    await page.locator('[role="log"] article.assistant .usage').waitFor();
    // Turn 2 reuses turn 1's prompt: the context inspector says how much came from the cache.
    await page.evaluate(() => window.__hearthMock.setChatDelay(5));
    await until(page, () => document.querySelector('button[aria-label="Send"], button.send')?.textContent?.includes('Send'));
    await composer(page).fill('And tomorrow?');
    await page.keyboard.press('Enter');
    await until(page, () => document.querySelectorAll('[role="log"] article.assistant .usage').length === 2);
    await page.locator('button.context-toggle').click();
    const cached = page.locator('[data-testid="context-cached"]');
    await cached.waitFor();
    assert.match(flat(await cached.textContent()), /^[\d,]+ of the [\d,]+ prompt tokens the model read came from its cache: not evaluated again\.$/);
    assertNoProblems(problems);
  });

  test('on a 4 GB computer the 0.5B model is offered, and the 7B, too big for it, is not among the other sizes', async (t) => {
    const { page, problems } = await session(t);
    await firstRun(page, { memory: '4' });
    assert.equal(await choice(page).getAttribute('data-model'), 'qwen2.5-0.5b');
    await page.getByText('Other sizes').click();
    const others = flat(await page.locator('.other-sizes ul').textContent());
    assert.match(others, /Qwen2\.5 1\.5B Instruct — 1\.1 GB, about 1\.7 GB of memory/);
    assert.doesNotMatch(others, /7B/);
    assertNoProblems(problems);
  });

  test('a download that does not match is refused with its reason, nothing is installed, and trying again works', async (t) => {
    const { page, problems } = await session(t);
    await firstRun(page);
    await page.evaluate(() => {
      window.__hearthMock.setBuiltinDelay(5);
      window.__hearthMock.failNextBuiltinDownload();
    });
    await page.getByRole('button', { name: 'Download and use' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The built-in model was not installed' });
    await alert.waitFor();
    assert.match(flat(await alert.textContent()), /the download does not match: .* nothing was installed Error code: local_model/);
    assert.equal(await composer(page).count(), 0, 'chat is not ready');
    await page.getByRole('button', { name: 'Download and use' }).click();
    await composer(page).waitFor();
    assertNoProblems(problems);
  });

  test('Cancel stops the download and says the next one resumes', async (t) => {
    const { page, problems } = await session(t);
    await firstRun(page);
    await page.evaluate(() => window.__hearthMock.holdBuiltin());
    await page.getByRole('button', { name: 'Download and use' }).click();
    await page.evaluate(() => window.__hearthMock.stepBuiltin(2));
    await until(page, () => document.querySelector('[data-testid="builtin-progress-text"]')?.textContent?.includes('of'));
    await page.getByRole('button', { name: 'Cancel' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'was cancelled' });
    await alert.waitFor();
    assert.match(flat(await alert.textContent()), /download it again to resume/);
    assert.equal((await ipcCalls(page, 'cancel_builtin_download')).length, 1);
    await page.getByRole('button', { name: 'Download and use' }).waitFor();
    assertNoProblems(problems);
  });
});

describe('Settings → Built-in models', () => {
  test('download from the catalogue, add a file, choose, set the idle unload, remove', async (t) => {
    const { page, problems } = await session(t, { bypassCSP: true });
    await page.goto(url('settings', { scenario: 'no-provider' }));
    const section = page.locator('section[data-section="models"]');
    await section.getByRole('heading', { name: 'Built-in models' }).waitFor();
    await section.locator('[data-testid="no-builtin-models"]').waitFor();
    const row = (name) => section.locator(`li[data-catalog="${name}"]`);
    assert.equal(await section.locator('li[data-catalog]').count(), 3);
    assert.match(flat(await row('qwen2.5-7b').textContent()), /Recommended for this computer/);
    assert.doesNotMatch(flat(await row('qwen2.5-1.5b').textContent()), /Recommended/);

    // Download the smallest one, watching its progress.
    await page.evaluate(() => window.__hearthMock.holdBuiltin());
    await row('qwen2.5-0.5b').getByRole('button', { name: 'Download Qwen2.5 0.5B Instruct' }).click();
    await page.evaluate(() => window.__hearthMock.stepBuiltin(5));
    await until(page, () => document.querySelector('li[data-catalog="qwen2.5-0.5b"] [data-testid="builtin-progress-text"]')?.textContent?.startsWith('246 MB of 491 MB'));
    await screenshot(page, 'settings-builtin-downloading');
    await page.evaluate(() => window.__hearthMock.releaseBuiltin());
    const installed = section.locator('li[data-model="qwen2.5-0.5b"]');
    await installed.waitFor();
    assert.match(flat(await installed.textContent()), /qwen2\.5-0\.5b Used for chat 491 MB · about 1020 MB of memory · 8,192 tokens of context · speed measured at its first answer/);
    assert.equal(await row('qwen2.5-0.5b').count(), 0, 'an installed model leaves the download list');

    // Add a GGUF the user has (the OS picker answers with its path).
    await section.getByRole('button', { name: 'Add a GGUF file…' }).click();
    const file = section.locator('li[data-model="llama-3.2-3b-instruct-q4_k_m"]');
    await file.waitFor();
    assert.match(flat(await file.textContent()), /your file/);
    assert.deepEqual(await ipcCalls(page, 'add_builtin_model'), [
      { path: '/home/ada/Models/llama-3.2-3b-instruct-q4_k_m.gguf', name: null },
    ]);
    // Cancelling the picker adds nothing.
    await page.evaluate(() => window.__hearthMock.pickModelFile(null));
    await section.getByRole('button', { name: 'Add a GGUF file…' }).click();
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'pick_model_file').length === 2);
    assert.equal((await ipcCalls(page, 'add_builtin_model')).length, 1);

    // Use the added file for chat.
    await file.getByRole('button', { name: 'Use for chat llama-3.2-3b-instruct-q4_k_m' }).click();
    await until(page, () => document.querySelector('li[data-model="llama-3.2-3b-instruct-q4_k_m"] [data-testid="in-use"]') !== null);
    assert.equal(await installed.locator('[data-testid="in-use"]').count(), 0);

    // How long a model stays loaded.
    await section.getByLabel('Unload a model after it has been idle for').selectOption({ label: '30 minutes' });
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'set_idle_unload'));
    assert.deepEqual(await ipcCalls(page, 'set_idle_unload'), [{ seconds: 1800 }]);
    assert.match(flat(await section.locator('[data-testid="engine-state"]').textContent()), /^No model is loaded now\./);
    await screenshot(page, 'settings-builtin-models');
    await assertAxeClean(page, 'Settings → Built-in models');

    // Remove asks first, and says what happens to the file.
    await installed.getByRole('button', { name: 'Remove qwen2.5-0.5b' }).click();
    const confirm = installed.getByRole('group', { name: 'Remove qwen2.5-0.5b?' });
    assert.match(flat(await confirm.textContent()), /delete its file \(frees 491 MB\)/);
    await until(page, () => document.activeElement?.classList.contains('cancel'));
    await confirm.getByRole('button', { name: 'Remove' }).click();
    await installed.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'remove_builtin_model'), [{ name: 'qwen2.5-0.5b' }]);
    await row('qwen2.5-0.5b').waitFor();
    assertNoProblems(problems);
  });
});

describe('Settings → Models for each job: a built-in model as the fast one', () => {
  test('an installed built-in model can be the fast model beside a provider, and the composer then offers it', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('settings'));
    const models = page.locator('section[data-section="models"]');
    const row = models.locator('li[data-catalog="qwen2.5-0.5b"]');
    await row.getByRole('button', { name: 'Download Qwen2.5 0.5B Instruct' }).click();
    await models.locator('li[data-model="qwen2.5-0.5b"]').waitFor();
    const fast = page.locator('fieldset[data-slot="slot-fast"]');
    const provider = fast.getByLabel('Provider');
    assert.ok((await provider.locator('option').allTextContents()).includes('Built-in (this computer)'));
    await provider.selectOption('builtin');
    const model = fast.getByLabel('Model');
    assert.deepEqual((await model.locator('option').allTextContents()).map(flat), ['qwen2.5-0.5b — 8K window']);
    await page.getByRole('button', { name: 'Use these models' }).click();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'set_slots'));
    const saved = (await ipcCalls(page, 'set_slots')).at(-1);
    assert.deepEqual(saved.fast, { provider: 'builtin', model: 'qwen2.5-0.5b' });
    assert.deepEqual(saved.main, { provider: 'local', model: 'llama3.2' });
    // The chat's composer now offers the choice between the two.
    await page.goto(url('chat'));
    const menu = page.getByRole('combobox', { name: 'Model' });
    await menu.waitFor();
    assert.deepEqual((await menu.locator('option').allTextContents()).map(flat), [
      'Auto',
      'Fast · qwen2.5-0.5b',
      'Main · llama3.2',
    ]);
    assertNoProblems(problems);
  });
});
