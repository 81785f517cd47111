// Settings → Model providers, Models for each job, the model table; and Chat's first run
// without a provider. Against the mock core (dist-mock/) with the production CSP.
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

const server = mockServer();

const url = (hash, scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/${hash}`;

const providerRow = (page, name) => page.locator(`li.provider[data-provider="${name}"]`);
const addForm = (page) => page.getByRole('form', { name: 'Add a provider' });

async function openSettings(page, scenario) {
  await page.goto(url('settings', scenario));
  await page.getByRole('heading', { level: 2, name: 'Model providers' }).waitFor();
  await page.locator('li.provider, [data-testid="no-providers"]').first().waitFor();
}

async function chooseService(page, label) {
  await page.getByLabel('Service').selectOption({ label });
}

describe('Settings → Model providers', () => {
  test('comes first and lists the providers with their preset, URL and where the key is kept', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    const sections = await page.$$eval('main section.card h2', (hs) => hs.map((h) => h.textContent?.trim()));
    assert.deepEqual(sections.slice(0, 2), ['Model providers', 'Models for each job']);
    assert.equal(await page.locator('li.provider').count(), 2);
    assert.equal(flat(await providerRow(page, 'local').locator('.title').textContent()), 'local Ollama');
    assert.equal(await providerRow(page, 'local').locator('.url').textContent(), 'http://localhost:11434/v1');
    assert.equal(flat(await providerRow(page, 'local').locator('[data-testid="key-location"]').textContent()), 'No key');
    assert.equal(
      flat(await providerRow(page, 'openai').locator('[data-testid="key-location"]').textContent()),
      'Key in the system keyring',
    );
    assertNoProblems(problems);
  });

  test('Test connection: success shows the number of models, failure shows the message and its code', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByRole('button', { name: 'Test connection to local' }).click();
    await until(page, () => document.querySelector('li[data-provider="local"] [data-testid="test-result"]')?.textContent?.includes('Connected'));
    assert.equal(flat(await providerRow(page, 'local').locator('[data-testid="test-result"]').textContent()), 'Connected · 3 models');

    // A provider whose server isn't running.
    await page.getByRole('button', { name: 'Add provider' }).click();
    await chooseService(page, 'Custom (OpenAI-compatible)');
    await page.getByLabel('Name').fill('offline-box');
    await page.getByLabel('Base URL').fill('http://localhost:9999/v1');
    await page.getByRole('button', { name: 'Add and test' }).click();
    const result = providerRow(page, 'offline-box').locator('[data-testid="test-result"]');
    await until(page, () => document.querySelector('li[data-provider="offline-box"] [data-testid="test-result"]')?.textContent?.includes("Couldn't connect"));
    assert.equal(
      flat(await result.textContent()),
      "Couldn't connect: Couldn't connect to http://localhost:9999/v1: connection refused. Is the server running? (provider_unreachable)",
    );
    // (The main model's provider is also tested once by itself, to list its models.)
    const tested = await ipcCalls(page, 'test_provider');
    assert.deepEqual(tested.at(-1), { name: 'offline-box' });
    assert.ok(tested.filter((c) => c.name === 'local').length >= 1);
    assertNoProblems(problems);
  });

  test('Add provider: validation, then success lists it with its key location and tests it', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByRole('button', { name: 'Add provider' }).click();
    await until(page, () => document.activeElement?.id === 'add-provider-preset');

    // Nothing chosen yet.
    await page.getByRole('button', { name: 'Add and test' }).click();
    await page.getByText('Choose what kind of provider this is.').waitFor();

    // Custom needs a URL.
    await chooseService(page, 'Custom (OpenAI-compatible)');
    assert.equal(await page.getByLabel('Name').inputValue(), 'custom', 'the name defaults to the preset id');
    assert.equal(await page.getByLabel('Base URL').inputValue(), '');
    assert.equal(await page.getByLabel('API key (optional)').getAttribute('type'), 'password');
    await page.getByRole('button', { name: 'Add and test' }).click();
    const urlError = page.locator('#add-provider-baseUrl-error');
    await urlError.waitFor();
    assert.match(await urlError.innerText(), /Enter the server's base URL: the Custom \(OpenAI-compatible\) preset has no default\./);
    assert.equal(await page.getByLabel('Base URL').getAttribute('aria-invalid'), 'true');
    await until(page, () => document.activeElement?.id === 'add-provider-url');
    await page.getByLabel('Base URL').fill('not a url');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await page.getByText('Enter a full address starting with http:// or https://').waitFor();
    assert.deepEqual(await ipcCalls(page, 'add_provider'), [], 'nothing sent while invalid');

    // A URL without a scheme is completed (http for this computer).
    await page.getByLabel('Base URL').fill('localhost:8080/v1');
    assert.equal(await urlError.count(), 0, 'typing clears the error');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await providerRow(page, 'custom').waitFor();
    assert.deepEqual(await ipcCalls(page, 'add_provider'), [
      { name: 'custom', preset: 'custom', baseUrl: 'http://localhost:8080/v1', apiKey: null },
    ]);
    assert.equal(flat(await providerRow(page, 'custom').locator('[data-testid="key-location"]').textContent()), 'No key');
    await until(page, () => document.querySelector('li[data-provider="custom"] [data-testid="test-result"]')?.textContent?.includes('Connected · 1 model'));
    assert.equal(await addForm(page).count(), 0, 'the form closes');

    // A cloud provider needs its key; it goes to the keyring.
    await page.getByRole('button', { name: 'Add provider' }).click();
    await chooseService(page, 'OpenAI');
    assert.equal(await page.getByLabel('Name').inputValue(), 'openai-2', 'a free name is suggested');
    assert.equal(await page.getByLabel('Base URL (optional)').inputValue(), 'https://api.openai.com/v1');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await page.getByText('Enter the API key from your OpenAI account.').waitFor();
    assert.match(await page.locator('#add-provider-key-help').innerText(), /system keyring .* never in a file/);
    await page.getByLabel('API key').fill('sk-bad-123');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await providerRow(page, 'openai-2').waitFor();
    assert.deepEqual((await ipcCalls(page, 'add_provider'))[1], {
      name: 'openai-2',
      preset: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'sk-bad-123',
    });
    assert.equal(
      flat(await providerRow(page, 'openai-2').locator('[data-testid="key-location"]').textContent()),
      'Key in the system keyring',
    );
    // This key is refused: the automatic test says so, with the code.
    await until(page, () => document.querySelector('li[data-provider="openai-2"] [data-testid="test-result"]')?.textContent?.includes('provider_auth'));
    assert.match(flat(await providerRow(page, 'openai-2').locator('[data-testid="test-result"]').textContent()), /rejected the API key \(401\)/);
    assertNoProblems(problems);
  });

  test("the core's refusal is shown inline with its code", async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByRole('button', { name: 'Add provider' }).click();
    await chooseService(page, 'Ollama (on this computer)');
    await page.getByLabel('Name').fill('my box!');
    await page.getByRole('button', { name: 'Add and test' }).click();
    const alert = addForm(page).getByRole('alert');
    await alert.waitFor();
    assert.match(flat(await alert.textContent()), /Hearth couldn't add this provider.*A provider name is 1–40 letters.*Error code: invalid_name/);
    // Escape closes the form.
    await page.getByLabel('Name').press('Escape');
    await addForm(page).waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.textContent?.includes('Add provider'));
    assertNoProblems(problems);
  });

  test('Remove asks inline first (Escape cancels), then removes', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByRole('button', { name: 'Remove openai' }).click();
    const confirm = page.getByRole('group', { name: 'Remove provider openai?' });
    await confirm.waitFor();
    assert.match(flat(await confirm.textContent()), /Remove “openai”\? Model choices that use it are cleared, and its key is deleted\./);
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.textContent?.includes('Remove'));
    assert.deepEqual(await ipcCalls(page, 'remove_provider'), []);

    await page.getByRole('button', { name: 'Remove openai' }).click();
    await confirm.getByRole('button', { name: 'Remove', exact: true }).click();
    await providerRow(page, 'openai').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'remove_provider'), [{ name: 'openai' }]);
    assert.equal(await page.locator('li.provider').count(), 1);
    assertNoProblems(problems);
  });
});

describe('Settings → Models for each job', () => {
  test('shows the saved slots and saves new ones with set_slots; the fallback is off until enabled', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    const mainModel = page.locator('#slot-main-model');
    await page.locator('select#slot-main-model:not([disabled])').waitFor();
    assert.equal(await page.locator('#slot-main-provider').inputValue(), 'local');
    assert.equal(await mainModel.inputValue(), 'llama3.2');
    assert.deepEqual(await mainModel.locator('option').allTextContents(), [
      'llama3.2 — 128K window',
      'qwen2.5-coder:7b — 32K window',
      'mistral — 32K window',
    ]);
    assert.equal(await page.locator('#slot-fast-provider').inputValue(), '', 'Same as main');
    const fallbackSwitch = page.getByRole('switch', { name: 'Use a fallback model' });
    assert.equal(await fallbackSwitch.isChecked(), false);
    assert.equal(await page.locator('#slot-fallback-provider').count(), 0);
    assert.match(
      await page.locator('#fallback-help').innerText(),
      /used only when the main model fails, and every answer it gives says so/,
    );

    await mainModel.selectOption('qwen2.5-coder:7b');
    await page.getByText('Not saved yet').waitFor();
    await page.locator('#slot-fast-provider').selectOption('openai');
    await page.locator('select#slot-fast-model:not([disabled])').waitFor();
    assert.equal(await page.locator('#slot-fast-model').inputValue(), 'gpt-4o', 'the first model is offered');
    await page.locator('#slot-fast-model').selectOption('gpt-4o-mini');

    // The fallback: enabled without a choice, it asks for one.
    await fallbackSwitch.check();
    await page.locator('#slot-fallback-provider').waitFor();
    await page.getByRole('button', { name: 'Use these models' }).click();
    await page.getByText('Choose the fallback provider, or turn the fallback off.').waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_slots'), []);
    await page.locator('#slot-fallback-provider').selectOption('local');
    await page.locator('select#slot-fallback-model:not([disabled])').waitFor();
    await page.locator('#slot-fallback-model').selectOption('mistral');
    await page.getByRole('button', { name: 'Use these models' }).click();
    await page.getByText('Saved. Hearth answers with qwen2.5-coder:7b (local).').waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_slots'), [
      {
        main: { provider: 'local', model: 'qwen2.5-coder:7b' },
        fast: { provider: 'openai', model: 'gpt-4o-mini' },
        fallback: { provider: 'local', model: 'mistral' },
        fallbackEnabled: true,
      },
    ]);
    assert.equal(await page.getByText('Not saved yet').count(), 0);

    // Turning the fallback off again saves no fallback.
    await fallbackSwitch.uncheck();
    await page.locator('#slot-fallback-provider').waitFor({ state: 'detached' });
    await page.locator('#slot-fast-provider').selectOption('');
    await page.getByRole('button', { name: 'Use these models' }).click();
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'set_slots').length === 2);
    assert.deepEqual((await ipcCalls(page, 'set_slots'))[1], {
      main: { provider: 'local', model: 'qwen2.5-coder:7b' },
      fast: null,
      fallback: null,
      fallbackEnabled: false,
    });
    // Chat now says which model answers.
    await page.keyboard.press('Control+1');
    await until(page, () => document.querySelector('.pane-head .model')?.textContent?.startsWith('qwen2.5-coder:7b'));
    assertNoProblems(problems);
  });

  test('a provider that lists no models gets a free-text model field', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByRole('button', { name: 'Add provider' }).click();
    await chooseService(page, 'Custom (OpenAI-compatible)');
    await page.getByLabel('Base URL').fill('http://offline.lan:8000/v1');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await providerRow(page, 'custom').waitFor();
    await page.locator('#slot-main-provider').selectOption('custom');
    const model = page.locator('#slot-main-model');
    await until(page, () => document.querySelector('#slot-main-model')?.tagName === 'INPUT');
    assert.match(await page.locator('#slot-main-model-help').innerText(), /Couldn't list its models .* Type the model's name\./);
    await model.fill('my-served-model');
    await page.getByRole('button', { name: 'Use these models' }).click();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'set_slots'));
    assert.deepEqual((await ipcCalls(page, 'set_slots'))[0].main, { provider: 'custom', model: 'my-served-model' });
    assertNoProblems(problems);
  });

  test('HEARTH_PROVIDER_URL: a callout says it overrides these settings', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page, 'env-provider');
    const callout = page.locator('[data-testid="env-override"]');
    await callout.waitFor();
    assert.match(flat(await callout.textContent()), /HEARTH_PROVIDER_URL overrides these settings/);
    await openSettings(page);
    await page.locator('#slot-main-provider').waitFor();
    assert.equal(await page.locator('[data-testid="env-override"]').count(), 0);
    assertNoProblems(problems);
  });
});

describe('Settings → Context windows and prices', () => {
  test('edit a row, reset it; add a model and reset (remove) it; bad numbers are refused', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page);
    await page.getByText('Context windows and prices').click();
    const row = page.locator('tr[data-model="gpt-4o"]');
    await row.waitFor();
    const cells = async (r) => r.locator('th, td').evaluateAll((els) => els.map((el) => el.textContent.replace(/\s+/g, ' ').trim()));
    assert.deepEqual(await cells(row), ['gpt-4o', '128,000', '$2.50', '$10.00', '$1.25', 'Edit gpt-4o']);
    assert.deepEqual(await ipcCalls(page, 'list_model_info'), [{}], 'loaded when opened');

    await page.getByRole('button', { name: 'Edit gpt-4o', exact: true }).click();
    const input = page.getByRole('textbox', { name: 'Input price of gpt-4o, USD per million tokens', exact: true });
    await until(page, () => document.activeElement?.getAttribute('aria-label')?.startsWith('Context window of gpt-4o'));
    await input.fill('abc');
    await input.press('Enter');
    await page.getByText('The input price must be a number').waitFor();
    await input.fill('3');
    await input.press('Enter');
    await until(page, () => document.querySelector('tr[data-model="gpt-4o"] td[data-col="input"]')?.textContent === '$3.00');
    assert.deepEqual(await ipcCalls(page, 'set_model_info'), [
      { model: 'gpt-4o', contextWindow: 128000, inputUsdPerMtok: 3, outputUsdPerMtok: 10, cachedUsdPerMtok: 1.25 },
    ]);
    assert.equal((await cells(row))[0], 'gpt-4o edited');

    await page.getByRole('button', { name: 'Reset gpt-4o', exact: true }).click();
    await until(page, () => document.querySelector('tr[data-model="gpt-4o"] td[data-col="input"]')?.textContent === '$2.50');
    assert.deepEqual(await ipcCalls(page, 'reset_model_info'), [{ model: 'gpt-4o' }]);
    assert.doesNotMatch(flat(await row.textContent()), /edited/);

    // Escape cancels an edit.
    await page.getByRole('button', { name: 'Edit gpt-4o-mini' }).click();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Edit gpt-4o-mini' }).waitFor();
    assert.equal((await ipcCalls(page, 'set_model_info')).length, 1);

    // Add a model.
    await page.getByRole('textbox', { name: 'New model name' }).fill('my-local-model');
    await page.getByRole('textbox', { name: "New model's context window, in tokens" }).fill('8192');
    await page.getByRole('button', { name: 'Add model' }).click();
    const added = page.locator('tr[data-model="my-local-model"]');
    await added.waitFor();
    assert.deepEqual(await cells(added), ['my-local-model edited', '8,192', '—', '—', '—', 'Edit my-local-model Reset my-local-model']);
    assert.deepEqual((await ipcCalls(page, 'set_model_info'))[1], {
      model: 'my-local-model',
      contextWindow: 8192,
      inputUsdPerMtok: null,
      outputUsdPerMtok: null,
      cachedUsdPerMtok: null,
    });
    await page.getByRole('button', { name: 'Reset my-local-model' }).click();
    await added.waitFor({ state: 'detached' });
    assertNoProblems(problems);
  });
});

describe('Chat without a provider (first run)', () => {
  test('finds Ollama; "Use Ollama" adds it, makes its first model the main one, and chat becomes ready', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', 'no-provider'));
    await page.getByRole('heading', { name: 'Choose a model to start chatting' }).waitFor();
    const server = page.locator('li.server[data-preset="ollama"]');
    await server.waitFor();
    assert.match(flat(await server.textContent()), /^Ollama is running on this computer — 3 models http:\/\/localhost:11434\/v1 Hearth will answer with llama3\.2/);
    await page.getByRole('button', { name: 'Use Ollama' }).click();

    await page.getByRole('textbox', { name: 'Message Hearth' }).waitFor();
    await until(page, () => document.activeElement?.getAttribute('aria-label') === 'Message Hearth');
    assert.deepEqual(await ipcCalls(page, 'add_provider'), [
      { name: 'ollama', preset: 'ollama', baseUrl: 'http://localhost:11434/v1', apiKey: null },
    ]);
    assert.deepEqual(await ipcCalls(page, 'set_slots'), [
      { main: { provider: 'ollama', model: 'llama3.2' }, fast: null, fallback: null, fallbackEnabled: false },
    ]);
    assert.equal(flat(await page.locator('.pane-head .model').textContent()), 'llama3.2 · ollama');
    // And it answers.
    await page.getByRole('textbox', { name: 'Message Hearth' }).fill('Hello!');
    await page.keyboard.press('Enter');
    await page.locator('[role="log"] article.assistant .usage').waitFor();
    assertNoProblems(problems);
  });

  test('a server already configured is used without adding it again', async (t) => {
    const { page, problems } = await session(t);
    await openSettings(page, 'no-provider');
    await chooseService(page, 'Ollama (on this computer)');
    await page.getByLabel('Name').fill('home');
    await page.getByRole('button', { name: 'Add and test' }).click();
    await providerRow(page, 'home').waitFor();
    await page.keyboard.press('Control+1');
    const server = page.locator('li.server[data-preset="ollama"]');
    await server.waitFor();
    assert.match(flat(await server.textContent()), /using the provider “home” you already set up/);
    await page.getByRole('button', { name: 'Use Ollama' }).click();
    await page.getByRole('textbox', { name: 'Message Hearth' }).waitFor();
    assert.equal((await ipcCalls(page, 'add_provider')).length, 1, 'only the one added in Settings');
    assert.deepEqual(await ipcCalls(page, 'set_slots'), [
      { main: { provider: 'home', model: 'llama3.2' }, fast: null, fallback: null, fallbackEnabled: false },
    ]);
    assertNoProblems(problems);
  });

  test('nothing found: explains how to start a server; "Look again" asks again; "Set up a provider…" opens Settings → Providers', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', 'no-provider'));
    await page.locator('li.server').waitFor();
    await page.evaluate(() => window.__hearthMock.setLocalServers([]));
    await page.getByRole('button', { name: 'Look again' }).click();
    await page.getByText('No model server is running on this computer right now.').waitFor();
    const text = flat(await page.locator('.first-run').textContent());
    assert.match(text, /Ollama: run ollama serve, then ollama pull llama3\.2\./);
    assert.match(text, /LM Studio: load a model and start its local server/);
    assert.match(text, /llama\.cpp: run llama-server -m your-model\.gguf --port 8080\./);
    assert.match(text, /add a cloud provider/);
    assert.equal((await ipcCalls(page, 'detect_local_servers')).length, 2);

    await page.getByRole('link', { name: 'Set up a provider…' }).click();
    await until(page, () => location.hash === '#/settings');
    await until(page, () => document.activeElement?.id === 'providers-title');
    // With no provider yet, the Add form is open.
    await addForm(page).waitFor();
    assertNoProblems(problems);
  });
});

describe('Providers: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations on Settings → Providers with the form, errors and the table open (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openSettings(page);
      await page.getByRole('button', { name: 'Test connection to local' }).click();
      await until(page, () => document.querySelector('li[data-provider="local"] [data-testid="test-result"]')?.textContent?.includes('Connected'));
      await page.getByRole('switch', { name: 'Use a fallback model' }).check();
      await page.getByRole('button', { name: 'Use these models' }).click();
      await page.getByText('Choose the fallback provider, or turn the fallback off.').waitFor();
      await page.getByText('Context windows and prices').click();
      await page.locator('tr[data-model="gpt-4o"]').waitFor();
      await page.getByRole('button', { name: 'Edit gpt-4o', exact: true }).click();
      await assertAxeClean(page, `settings/providers (${colorScheme})`);
      await page.getByRole('button', { name: 'Add provider' }).click();
      await chooseService(page, 'OpenAI');
      await page.getByRole('button', { name: 'Add and test' }).click();
      await page.getByText('Enter the API key from your OpenAI account.').waitFor();
      await page.mouse.move(5, 5);
      await assertAxeClean(page, `settings/add provider with an error (${colorScheme})`);
      await screenshot(page, `settings-providers-${colorScheme}`);

      await openSettings(page, 'env-provider');
      await page.locator('[data-testid="env-override"]').waitFor();
      await assertAxeClean(page, `settings/env provider (${colorScheme})`);
      assertNoProblems(problems);
    });

    test(`axe finds no violations on the first-run views (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('chat', 'no-provider'));
      await page.locator('li.server').waitFor();
      await assertAxeClean(page, `first run, Ollama found (${colorScheme})`);
      await screenshot(page, `chat-first-run-${colorScheme}`);
      await page.evaluate(() => window.__hearthMock.setLocalServers([]));
      await page.getByRole('button', { name: 'Look again' }).click();
      await page.getByText('No model server is running on this computer right now.').waitFor();
      await assertAxeClean(page, `first run, nothing found (${colorScheme})`);
      await screenshot(page, `chat-first-run-none-${colorScheme}`);
      assertNoProblems(problems);
    });
  }
});
