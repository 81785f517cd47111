// Browser tests of Memory → Search model (the embedding model) against the mock core
// (dist-mock/, see src/mocks/embedding.ts), served with the production CSP.
//
// Download and re-indexing run "in the background" in the mock; where a test looks at a
// state in between, it holds the mock (__hearthMock.holdEmbedding) and lets one event
// through at a time (stepEmbedding), so nothing depends on timing.
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

const url = (embedding, scenario) => {
  const query = new URLSearchParams();
  if (scenario) query.set('scenario', scenario);
  if (embedding) query.set('embedding', embedding);
  const search = query.toString();
  return `${server.origin}/index.html${search ? `?${search}` : ''}#/memory`;
};

const MODEL_BYTES = 90_868_376;
const EXPLANATION =
  'Memory search is keyword-only until the search model is downloaded (about 90 MB, once, from Hugging Face). Nothing you store is sent.';

const section = (page) => page.getByRole('region', { name: 'Search model' });
const choice = (page) => section(page).locator('[data-testid="search-model-choice"]');
const indexed = (page) => section(page).locator('[data-testid="search-model-indexed"]');
const downloadButton = (page) => section(page).getByRole('button', { name: /^Download/ });
const changeButton = (page) => section(page).getByRole('button', { name: 'Change the search model…' });
const downloadBar = (page) => section(page).getByRole('progressbar', { name: 'Downloading the search model' });
const indexingBar = (page) => section(page).getByRole('progressbar', { name: 'Indexing memories' });
const form = (page) => section(page).getByRole('form', { name: 'Which model finds memories by meaning?' });
const modelInput = (page) => form(page).getByRole('textbox', { name: 'Embedding model' });

/** Open the Memory screen and wait until the search model section has read its status. */
async function openMemory(page, embedding, scenario) {
  await page.goto(url(embedding, scenario));
  await choice(page).waitFor();
}

/** Wait until the section's text (what a sighted user reads) matches. */
async function untilText(page, locator, expected) {
  const handle = await locator.elementHandle();
  await until(
    page,
    ([el, want]) => {
      const copy = el.cloneNode(true);
      copy.querySelectorAll('.visually-hidden').forEach((hidden) => hidden.remove());
      return (copy.textContent ?? '').replace(/\s+/g, ' ').trim() === want;
    },
    [handle, expected],
  );
}

/** The numbers of a progress bar, as assistive technology reads them. */
async function bar(locator) {
  return locator.evaluate((el) => ({
    now: el.hasAttribute('aria-valuenow') ? Number(el.getAttribute('aria-valuenow')) : null,
    max: el.hasAttribute('aria-valuemax') ? Number(el.getAttribute('aria-valuemax')) : null,
    text: el.getAttribute('aria-valuetext'),
  }));
}

const hold = (page) => page.evaluate(() => window.__hearthMock.holdEmbedding());
const step = (page, count = 1) => page.evaluate((n) => window.__hearthMock.stepEmbedding(n), count);
const release = (page) => page.evaluate(() => window.__hearthMock.releaseEmbedding());

/** Open "Change…", pick a provider's model and type its name (empty: leave it empty). */
async function chooseProviderModel(page, provider, model) {
  await changeButton(page).click();
  await form(page).getByRole('radio', { name: /A provider's model/ }).check();
  await form(page).getByRole('combobox', { name: 'Provider' }).selectOption(provider);
  await modelInput(page).fill(model);
}

describe('Memory → Search model: the local model', () => {
  test('keyword-only at first; Download shows a bar that advances, then the model and "All 9 memories indexed"', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.equal(flat(await choice(page).innerText()), 'On this computer (not downloaded yet)');
    assert.match(flat(await section(page).innerText()), new RegExp(EXPLANATION.replace(/[().]/g, '\\$&')));
    assert.equal(await indexed(page).innerText(), '');
    assert.equal(await downloadBar(page).count(), 0);

    await hold(page);
    await downloadButton(page).click();
    await downloadBar(page).waitFor();
    assert.equal(await downloadButton(page).getAttribute('aria-disabled'), 'true', 'no second download meanwhile');
    assert.equal(flat(await downloadButton(page).innerText()), 'Downloading…');
    assert.deepEqual(await bar(downloadBar(page)), { now: null, max: null, text: 'Starting the download' }, 'no bytes yet: no amount');
    // config.json, tokenizer.json, then the first piece of model.safetensors.
    await step(page, 3);
    await until(page, () => document.querySelector('[data-testid="download-progress"]')?.textContent?.includes('model.safetensors'));
    const first = await bar(downloadBar(page));
    assert.equal(first.max, MODEL_BYTES);
    assert.ok(first.now > 0 && first.now < MODEL_BYTES, JSON.stringify(first));
    assert.match(first.text, /^model\.safetensors: [\d.]+ of 90\.9 MB$/);
    await step(page);
    await until(
      page,
      (before) => Number(document.querySelector('[data-testid="download-progress"] [role="progressbar"]')?.getAttribute('aria-valuenow')) > before,
      first.now,
    );
    const second = await bar(downloadBar(page));
    assert.ok(second.now > first.now, 'the bar advanced');
    assert.equal(
      flat(await section(page).locator('[data-testid="download-progress"] .meter-label').innerText()),
      `Downloading the search model… model.safetensors: ${(second.now / 1e6).toFixed(1)} of 90.9 MB`,
    );
    await screenshot(page, 'memory-embedding');
    assert.deepEqual(await ipcCalls(page, 'download_embedding_model'), [{}]);

    await release(page);
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assert.equal(await downloadButton(page).count(), 0);
    assert.equal(await downloadBar(page).count(), 0);
    assert.equal(await indexingBar(page).count(), 0);
    assert.doesNotMatch(flat(await section(page).innerText()), /keyword-only/);
    assert.deepEqual(await ipcCalls(page, 'download_embedding_model'), [{}], 'clicked once, downloaded once');
    await screenshot(page, 'memory-embedding-indexed');
    assertNoProblems(problems);
  });

  test('after the download, memories are indexed with a bar counting them', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await hold(page);
    await downloadButton(page).click();
    // The three files: 1 + 1 + 6 events.
    await step(page, 8);
    await indexingBar(page).waitFor();
    assert.deepEqual(await bar(indexingBar(page)), { now: 0, max: 9, text: '0 of 9 memories' });
    await step(page);
    await untilText(page, section(page).locator('[data-testid="indexing-progress"] .meter-label'), 'Indexing memories: 3 / 9');
    assert.deepEqual(await bar(indexingBar(page)), { now: 3, max: 9, text: '3 of 9 memories' });
    assert.equal(await indexed(page).innerText(), '', 'the bar says it; the count line waits');
    await step(page);
    await untilText(page, section(page).locator('[data-testid="indexing-progress"] .meter-label'), 'Indexing memories: 6 / 9');
    await release(page);
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(await indexingBar(page).count(), 0);
    assertNoProblems(problems);
  });

  test('a failed download says why and offers Download again, which then works', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.evaluate(() => window.__hearthMock.failNextDownload());
    await downloadButton(page).click();
    const alert = section(page).getByRole('alert');
    await alert.waitFor();
    assert.equal(
      flat(await alert.innerText()),
      "Couldn't download the search model: Couldn't download model.safetensors from huggingface.co: the connection was reset. Check your connection and try again.",
    );
    assert.equal(await downloadBar(page).count(), 0);
    assert.equal(await downloadButton(page).getAttribute('aria-disabled'), null);
    assert.equal(flat(await downloadButton(page).innerText()), 'Download');
    assert.equal(flat(await choice(page).innerText()), 'On this computer (not downloaded yet)');
    assert.match(flat(await section(page).innerText()), /Memory search is keyword-only until the search model is downloaded/);

    await downloadButton(page).click();
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(await section(page).getByRole('alert').count(), 0, 'the old error went away');
    assert.equal((await ipcCalls(page, 'download_embedding_model')).length, 2);
    assertNoProblems(problems);
  });

  test('leaving the screen during the download and coming back still shows it, to the end', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await hold(page);
    await downloadButton(page).click();
    await step(page, 3);
    await until(page, () => document.querySelector('[data-testid="download-progress"]')?.textContent?.includes('model.safetensors'));
    await page.evaluate(() => (location.hash = '#/chat'));
    await section(page).waitFor({ state: 'detached' });
    await step(page, 2);
    await page.evaluate(() => (location.hash = '#/memory'));
    await downloadBar(page).waitFor();
    assert.equal(await downloadButton(page).getAttribute('aria-disabled'), 'true');
    await release(page);
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assert.equal((await ipcCalls(page, 'download_embedding_model')).length, 1);
    assertNoProblems(problems);
  });
});

describe('Memory → Search model: changing it', () => {
  test("a provider's model: tried, then memories are indexed with it and its dimensions are shown", async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assert.equal(flat(await indexed(page).innerText()), 'All 9 memories indexed');
    assert.equal(await downloadButton(page).count(), 0);

    await changeButton(page).click();
    assert.equal(await changeButton(page).getAttribute('aria-expanded'), 'true');
    const local = form(page).getByRole('radio', { name: /On this computer \(recommended\)/ });
    assert.ok(await local.isChecked(), 'the current choice is selected');
    assert.ok(await local.evaluate((el) => el === document.activeElement), 'focus is on it');
    await form(page).getByRole('radio', { name: /A provider's model/ }).check();
    const providers = await form(page).getByRole('combobox', { name: 'Provider' }).locator('option').allInnerTexts();
    assert.deepEqual(providers, ['local', 'openai'], 'the configured providers');
    await form(page).getByRole('combobox', { name: 'Provider' }).selectOption('local');
    await modelInput(page).fill('nomic-embed-text');

    await hold(page);
    await form(page).getByRole('button', { name: 'Apply' }).click();
    await indexingBar(page).waitFor();
    assert.equal(await form(page).count(), 0, 'the form closed');
    assert.ok(await changeButton(page).evaluate((el) => el === document.activeElement), 'focus back on Change…');
    assert.equal(flat(await choice(page).innerText()), 'local: nomic-embed-text (768 dimensions)');
    assert.match(flat(await section(page).innerText()), /Memory texts are sent to local to be indexed\./);
    assert.deepEqual(await bar(indexingBar(page)), { now: 0, max: 9, text: '0 of 9 memories' });
    await step(page);
    await untilText(page, section(page).locator('[data-testid="indexing-progress"] .meter-label'), 'Indexing memories: 3 / 9');
    await step(page);
    await untilText(page, section(page).locator('[data-testid="indexing-progress"] .meter-label'), 'Indexing memories: 6 / 9');
    assert.equal((await bar(indexingBar(page))).now, 6);
    await release(page);
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(await indexingBar(page).count(), 0);
    assert.equal(flat(await choice(page).innerText()), 'local: nomic-embed-text (768 dimensions)');
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), [{ kind: 'provider', provider: 'local', model: 'nomic-embed-text' }]);
    assertNoProblems(problems);
  });

  test('a model the provider lacks: the error shows in the form and the old choice stays', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    await chooseProviderModel(page, 'local', 'missing');
    await form(page).getByRole('button', { name: 'Apply' }).click();
    const alert = form(page).getByRole('alert');
    await alert.waitFor();
    assert.equal(
      flat(await alert.innerText()),
      'Couldn\'t switch the search model: local: model "missing" not found. The current choice stays.',
    );
    assert.equal(await modelInput(page).getAttribute('aria-invalid'), 'true');
    assert.ok(await modelInput(page).evaluate((el) => el === document.activeElement), 'focus on the model name, to fix it');
    assert.equal(flat(await form(page).getByRole('button', { name: 'Apply' }).innerText()), 'Apply');
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assert.equal(flat(await indexed(page).innerText()), 'All 9 memories indexed');
    assert.equal(await indexingBar(page).count(), 0);
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), [{ kind: 'provider', provider: 'local', model: 'missing' }]);

    // Typing another name clears the message; Cancel closes the form; nothing changed.
    await modelInput(page).fill('nomic-embed-text');
    assert.equal(await form(page).getByRole('alert').count(), 0);
    assert.equal(await modelInput(page).getAttribute('aria-invalid'), null);
    await form(page).getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await form(page).count(), 0);
    assert.ok(await changeButton(page).evaluate((el) => el === document.activeElement));
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assertNoProblems(problems);
  });

  test('Off: "Keyword search only."; back to the local model re-indexes', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    await changeButton(page).click();
    await form(page).getByRole('radio', { name: /Off — keyword search only/ }).check();
    await form(page).getByRole('button', { name: 'Apply' }).click();
    await untilText(page, choice(page), 'Keyword search only.');
    assert.equal(await indexed(page).innerText(), '');
    assert.equal(await indexingBar(page).count(), 0);
    assert.equal(await downloadButton(page).count(), 0);
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), [{ kind: 'off', provider: null, model: null }]);

    await changeButton(page).click();
    assert.ok(await form(page).getByRole('radio', { name: /Off — keyword search only/ }).isChecked());
    await form(page).getByRole('radio', { name: /On this computer/ }).check();
    await form(page).getByRole('button', { name: 'Apply' }).click();
    await untilText(page, choice(page), 'On this computer: all-MiniLM-L6-v2');
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.deepEqual((await ipcCalls(page, 'set_embedding')).at(-1), { kind: 'local', provider: null, model: 'all-MiniLM-L6-v2' });
    assertNoProblems(problems);
  });

  test('a stronger local model: chosen in the form, downloaded on request, then memories are indexed with it', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    await changeButton(page).click();
    const minilm = form(page).getByRole('radio', { name: /all-MiniLM-L6-v2/ });
    const bge = form(page).getByRole('radio', { name: /bge-small-en-v1\.5/ });
    assert.ok(await minilm.isChecked(), 'the model in use is checked');
    assert.match(flat(await form(page).innerText()), /all-MiniLM-L6-v2 — fast, the default \(about 90 MB\)\s*Downloaded/);
    await bge.check();
    await screenshot(page, 'memory-embedding-local-models');
    await form(page).getByRole('button', { name: 'Apply' }).click();
    await untilText(page, choice(page), 'On this computer: bge-small-en-v1.5 (not downloaded yet)');
    assert.deepEqual((await ipcCalls(page, 'set_embedding')).at(-1), { kind: 'local', provider: null, model: 'bge-small-en-v1.5' });
    assert.match(flat(await section(page).innerText()), /keyword-only until the search model is downloaded \(about 133 MB, once/);
    await downloadButton(page).click();
    await untilText(page, choice(page), 'On this computer: bge-small-en-v1.5');
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.equal(await downloadButton(page).count(), 0);

    // Back to the default: its files are still here, so nothing is downloaded.
    await changeButton(page).click();
    await form(page).getByRole('radio', { name: /all-MiniLM-L6-v2/ }).check();
    await form(page).getByRole('button', { name: 'Apply' }).click();
    await untilText(page, choice(page), 'On this computer: all-MiniLM-L6-v2');
    assert.deepEqual(await ipcCalls(page, 'download_embedding_model'), [{}], 'downloaded once, for bge-small');
    assertNoProblems(problems);
  });

  test("validation: a provider's model needs a name (no call); Escape closes the form", async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    await chooseProviderModel(page, 'openai', '   ');
    assert.equal(await modelInput(page).getAttribute('placeholder'), 'text-embedding-3-small', "an example for the provider's kind");
    await form(page).getByRole('button', { name: 'Apply' }).click();
    const alert = form(page).getByRole('alert');
    await alert.waitFor();
    assert.equal(flat(await alert.innerText()), "Type the name of openai's embedding model, for example text-embedding-3-small.");
    assert.equal(await modelInput(page).getAttribute('aria-invalid'), 'true');
    assert.ok(await modelInput(page).evaluate((el) => el === document.activeElement));
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), [], 'nothing was sent');

    // Typing clears the message.
    await modelInput(page).fill('text-embedding-3-small');
    assert.equal(await form(page).getByRole('alert').count(), 0);

    await page.keyboard.press('Escape');
    assert.equal(await form(page).count(), 0);
    assert.ok(await changeButton(page).evaluate((el) => el === document.activeElement));
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), []);
    assertNoProblems(problems);
  });

  test('keyboard only: Change…, arrow to Off, Enter applies', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'provider');
    assert.equal(flat(await choice(page).innerText()), 'local: nomic-embed-text (768 dimensions)');
    await changeButton(page).focus();
    await page.keyboard.press('Enter');
    const providerRadio = form(page).getByRole('radio', { name: /A provider's model/ });
    await until(page, () => document.activeElement?.getAttribute('type') === 'radio');
    assert.ok(await providerRadio.evaluate((el) => el === document.activeElement));
    assert.equal(await modelInput(page).inputValue(), 'nomic-embed-text', 'the current model, to edit');
    await page.keyboard.press('ArrowDown');
    assert.ok(await form(page).getByRole('radio', { name: /Off — keyword search only/ }).isChecked());
    await page.keyboard.press('Enter');
    await untilText(page, choice(page), 'Keyword search only.');
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), [{ kind: 'off', provider: null, model: null }]);
    assertNoProblems(problems);
  });

  test('store_changed (another process changed the model) reads the status again', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'local');
    await page.evaluate(() => window.__hearthMock.setEmbeddingElsewhere('off'));
    await untilText(page, choice(page), 'Keyword search only.');
    await page.evaluate(() => window.__hearthMock.setEmbeddingElsewhere('provider', 'openai', 'text-embedding-3-small'));
    await untilText(page, choice(page), 'openai: text-embedding-3-small (768 dimensions)');
    await untilText(page, indexed(page), 'All 9 memories indexed');
    assert.deepEqual(await ipcCalls(page, 'set_embedding'), []);
    assertNoProblems(problems);
  });

  test('the empty Memory screen shows the section too', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('local', 'memory-empty'));
    await page.getByRole('heading', { name: 'Nothing remembered yet' }).waitFor();
    await untilText(page, indexed(page), 'No memories to index yet');
    assert.equal(flat(await choice(page).innerText()), 'On this computer: all-MiniLM-L6-v2');
    assertNoProblems(problems);
  });
});

describe('Memory → Search model: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations: keyword-only, downloading, indexing, indexed, the form with an error (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openMemory(page);
      await assertAxeClean(page, `search model keyword-only (${colorScheme})`);
      await screenshot(page, `memory-embedding-keyword-only-${colorScheme}`);

      await hold(page);
      await downloadButton(page).click();
      await step(page, 4);
      await until(page, () => Number(document.querySelector('[data-testid="download-progress"] [role="progressbar"]')?.getAttribute('aria-valuenow')) > 20_000_000);
      await assertAxeClean(page, `search model downloading (${colorScheme})`);
      await screenshot(page, `memory-embedding-downloading-${colorScheme}`);
      // The rest of model.safetensors, then the first batch of memories.
      await step(page, 5);
      await indexingBar(page).waitFor();
      await until(page, () => document.querySelector('[data-testid="indexing-progress"]')?.textContent?.includes('3 / 9'));
      await assertAxeClean(page, `search model indexing (${colorScheme})`);
      await screenshot(page, `memory-embedding-indexing-${colorScheme}`);
      await release(page);
      await untilText(page, indexed(page), 'All 9 memories indexed');
      await assertAxeClean(page, `search model indexed (${colorScheme})`);

      await chooseProviderModel(page, 'local', 'missing');
      await form(page).getByRole('button', { name: 'Apply' }).click();
      await form(page).getByRole('alert').waitFor();
      await assertAxeClean(page, `search model form with an error (${colorScheme})`);
      await screenshot(page, `memory-embedding-change-${colorScheme}`);
      await modelInput(page).fill('');
      await form(page).getByRole('button', { name: 'Apply' }).click();
      await until(page, () => document.querySelector('[data-testid="search-model"] form [role="alert"]')?.textContent?.includes('Type the name'));
      await assertAxeClean(page, `search model form validation (${colorScheme})`);
      await page.keyboard.press('Escape');
      assertNoProblems(problems);
    });
  }
});
