// Browser tests of the Folders screen and of an answer's sources against the mock core
// (dist-mock/, see src/mocks/folders.ts), served with the production CSP.
//
// Indexing runs "in the background" in the mock; where a test looks at a state in between,
// it holds the mock (__hearthMock.holdIndexing) and lets one file through at a time
// (stepIndexing), so nothing depends on timing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, flat, ipcCalls, mockServer, screenshot, session, until } from './harness.mjs';

const server = mockServer();

const url = (scenario, route = 'folders') => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/${route}`;

const card = (page, path) => page.locator(`[data-testid="folder"][data-path="${path}"]`);
const hold = (page) => page.evaluate(() => window.__hearthMock.holdIndexing());
const step = (page, count = 1) => page.evaluate((n) => window.__hearthMock.stepIndexing(n), count);
const release = (page) => page.evaluate(() => window.__hearthMock.releaseIndexing());

async function openFolders(page, scenario) {
  await page.goto(url(scenario));
  await page.locator('[data-testid="folders-counts"], [aria-labelledby="folders-empty"]').first().waitFor();
}

async function bar(locator) {
  return locator.evaluate((el) => ({
    now: Number(el.getAttribute('aria-valuenow')),
    max: Number(el.getAttribute('aria-valuemax')),
    text: el.getAttribute('aria-valuetext'),
  }));
}

describe('Folders', () => {
  test('a watched folder shows what was read, and why a file was skipped or failed', async (t) => {
    const { page, problems } = await session(t, { bypassCSP: true });
    await openFolders(page);
    assert.equal(flat(await page.locator('[data-testid="folders-counts"]').innerText()), '1 folder · 4 files read · 7 passages');
    const notes = card(page, '/home/ada/Notes');
    assert.equal(await notes.getAttribute('data-state'), 'watching');
    assert.equal(flat(await notes.locator('[data-testid="folder-state"]').innerText()), 'Up to date');
    assert.match(flat(await notes.locator('[data-testid="folder-counts"]').innerText()), /^4 read · 1 skipped · 1 failed · 7 passages · all searchable by meaning · updated 2 hours ago$/);
    assert.equal(flat(await notes.getByTestId('folder-line').innerText()), 'Up to date: changes are read as they happen');

    // The system will not watch it (its limit of watched folders): the card says how often
    // it is checked (the engine's number, here 45 s), and why; watched again, it says so.
    await page.evaluate(() => window.__hearthMock.setPolling('/home/ada/Notes', 'No space left on device (os error 28)', 45));
    await until(page, () => document.querySelector('[data-path="/home/ada/Notes"]')?.getAttribute('data-state') === 'polling');
    assert.equal(flat(await notes.locator('[data-testid="folder-state"]').innerText()), 'Checked every 45 s');
    assert.match(flat(await notes.getByTestId('folder-line').innerText()), /checked for changes every 45 seconds/);
    assert.equal(flat(await notes.getByTestId('folder-watch-reason').innerText()), 'No space left on device (os error 28)');
    await screenshot(page, 'folders-polling');
    await page.evaluate(() => window.__hearthMock.setPolling('/home/ada/Notes', null));
    await until(page, () => document.querySelector('[data-path="/home/ada/Notes"]')?.getAttribute('data-state') === 'watching');
    assert.equal(await notes.getByTestId('folder-watch-reason').count(), 0);

    // Files opens on the failed ones first: the reason, in words.
    await notes.getByRole('button', { name: 'Files' }).click();
    const rows = notes.locator('[data-testid="file-row"]');
    await rows.first().waitFor();
    assert.deepEqual(
      (await rows.allInnerTexts()).map(flat),
      ['old/contract.docx 23 KB Damaged: the document is damaged: its zip archive ends early'],
    );
    await notes.getByRole('button', { name: 'Skipped' }).click();
    await until(page, () => document.querySelector('[data-testid="file-row"]')?.getAttribute('data-status') === 'skipped');
    assert.match(flat(await rows.first().innerText()), /^photos\/scan-0001\.tiff 4\.6 MB Not text: not text/);
    await notes.getByRole('button', { name: 'All' }).click();
    await until(page, () => document.querySelectorAll('[data-testid="file-row"]').length === 6);
    assert.deepEqual(await ipcCalls(page, 'list_folder_files'), [
      { path: '/home/ada/Notes', status: 'failed' },
      { path: '/home/ada/Notes', status: 'skipped' },
      { path: '/home/ada/Notes', status: null },
    ]);
    await assertAxeClean(page, 'the Folders screen with a file list');
    assertNoProblems(problems);
  });

  test('adding a folder: refusals are explained; then it is read file by file with a bar, and searchable as it goes', async (t) => {
    const { page, problems } = await session(t);
    await openFolders(page);
    await page.getByRole('button', { name: 'Add folder' }).click();
    const input = page.getByRole('textbox', { name: 'Folder' });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'folder-path', 'the path field has focus');

    await input.fill('/home/ada/Notes/recipes');
    await input.press('Enter');
    await page.locator('[data-testid="add-error"]').waitFor();
    assert.equal(flat(await page.locator('[data-testid="add-error"]').innerText()), '/home/ada/Notes/recipes is inside /home/ada/Notes, which is already watched');
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    await input.fill('/home/ada/missing');
    await page.getByRole('button', { name: 'Add and start reading' }).click();
    await until(page, () => document.querySelector('[data-testid="add-error"]')?.textContent?.includes('does not exist'));

    // Browse: the OS picker's answer is added at once.
    await hold(page);
    await page.getByRole('button', { name: 'Browse…' }).click();
    const docs = card(page, '/home/ada/Documents');
    await docs.waitFor();
    assert.equal(await page.locator('[data-testid="add-folder"]').count(), 0, 'the add form closed');
    assert.deepEqual(await ipcCalls(page, 'pick_folder'), [{}]);
    assert.deepEqual((await ipcCalls(page, 'add_folder')).at(-1), { path: '/home/ada/Documents' });
    await until(page, () => document.querySelector('[data-path="/home/ada/Documents"]')?.getAttribute('data-state') === 'indexing');
    assert.equal(flat(await docs.locator('[data-testid="folder-line"]').innerText()), 'Reading: 0 of 12 files');

    await step(page, 4);
    await until(page, () => document.querySelector('[data-path="/home/ada/Documents"] [data-testid="folder-line"]')?.textContent?.includes('4 of 12'));
    assert.deepEqual(await bar(docs.getByRole('progressbar')), { now: 4, max: 12, text: '4 of 12 files' });
    await until(page, () => document.querySelector('[data-testid="index-progress"]')?.textContent?.includes('4 of 12'));
    // What is read is searchable already: by words until its vectors follow.
    assert.match(flat(await docs.locator('[data-testid="folder-vectors"]').innerText()), /^0 searchable by meaning \(the rest by words\)$/);
    await page.getByTestId('folder-search').fill('meeting budget');
    await page.locator('[data-testid="search-hit"]').first().waitFor();
    assert.equal(await page.locator('[data-testid="search-hit"]').count(), 4);
    await screenshot(page, 'folders-indexing');

    await release(page);
    await until(page, () => document.querySelector('[data-path="/home/ada/Documents"]')?.getAttribute('data-state') === 'watching');
    assert.equal(await page.locator('[data-testid="index-progress"]').count(), 0, 'the run bar goes when done');
    assert.match(flat(await docs.locator('[data-testid="folder-counts"]').innerText()), /^12 read · 12 passages · all searchable by meaning/);
    await until(page, () => document.querySelectorAll('[data-testid="search-hit"]').length === 10);
    assertNoProblems(problems);
  });

  test('pause keeps a folder from being read until resumed; remove asks first and forgets it', async (t) => {
    const { page, problems } = await session(t);
    await openFolders(page);
    await hold(page);
    await page.evaluate(() => window.__hearthMock.pickFolder('/home/ada/Projects'));
    await page.getByRole('button', { name: 'Add folder' }).click();
    await page.getByRole('button', { name: 'Browse…' }).click();
    const projects = card(page, '/home/ada/Projects');
    await projects.waitFor();
    await step(page, 2);
    await until(page, () => document.querySelector('[data-path="/home/ada/Projects"] [data-testid="folder-line"]')?.textContent?.includes('2 of 12'));

    await projects.getByRole('button', { name: 'Pause' }).click();
    await until(page, () => document.querySelector('[data-path="/home/ada/Projects"]')?.getAttribute('data-state') === 'paused');
    assert.equal(flat(await projects.locator('[data-testid="folder-line"]').innerText()), 'Paused with 10 files still to read');
    // Steps let through while paused read nothing: the ingest lane skips paused folders.
    await step(page, 3);
    await page.evaluate(() => window.__hearthMock.emit('store_changed', null));
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'list_folders').length >= 1);
    assert.match(flat(await projects.locator('[data-testid="folder-counts"]').innerText()), /^2 read/, 'nothing read while paused');
    assert.deepEqual((await ipcCalls(page, 'set_folder_paused')).at(-1), { path: '/home/ada/Projects', paused: true });

    await release(page);
    await projects.getByRole('button', { name: 'Resume' }).click();
    await until(page, () => document.querySelector('[data-path="/home/ada/Projects"]')?.getAttribute('data-state') === 'watching');

    await projects.getByRole('button', { name: 'Remove Projects' }).click();
    const dialog = page.getByRole('dialog', { name: 'Stop reading Projects?' });
    await dialog.waitFor();
    assert.match(flat(await dialog.innerText()), /Your files are not touched\./);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await projects.count(), 1, 'cancel keeps it');
    await projects.getByRole('button', { name: 'Remove Projects' }).click();
    await dialog.getByRole('button', { name: 'Remove folder' }).click();
    await until(page, () => !document.querySelector('[data-path="/home/ada/Projects"]'));
    assert.deepEqual(await ipcCalls(page, 'remove_folder'), [{ path: '/home/ada/Projects' }]);
    assert.equal(flat(await page.locator('[data-testid="folders-counts"]').innerText()), '1 folder · 4 files read · 7 passages');
    assertNoProblems(problems);
  });

  test('a search hit opens the passage view; Open file and Show in folder go through the core by passage', async (t) => {
    const { page, problems } = await session(t, { bypassCSP: true });
    await openFolders(page);
    await page.getByTestId('folder-search').fill('sourdough bake');
    const hit = page.locator('[data-testid="search-hit"]').first();
    await hit.waitFor();
    assert.match(flat(await hit.innerText()), /^recipes\/sourdough\.md Notes · lines 11-20 · Sourdough > Bake Bake at 250 °C/);
    await hit.click();
    const view = page.getByTestId('passage-view');
    await view.locator('[data-testid="passage-text"]').waitFor();
    assert.equal(await view.getByTestId('passage-path').innerText(), '/home/ada/Notes/recipes/sourdough.md');
    assert.equal(flat(await view.getByTestId('passage-place').innerText()), 'lines 11-20 · Sourdough > Bake');
    await view.getByRole('button', { name: 'Open file' }).click();
    await view.getByRole('button', { name: 'Show in folder' }).click();
    await until(page, () => window.__hearthMock.openedFiles().length === 2);
    assert.deepEqual(await page.evaluate(() => window.__hearthMock.openedFiles()), [
      { path: '/home/ada/Notes/recipes/sourdough.md', reveal: false },
      { path: '/home/ada/Notes/recipes/sourdough.md', reveal: true },
    ]);
    const calls = await ipcCalls(page, 'open_source_file');
    assert.equal(calls.length, 2);
    assert.ok(calls.every((c) => Object.keys(c).sort().join() === 'chunkId,reveal'), 'the window sends a passage id, never a path');
    await assertAxeClean(page, 'the passage view');
    await page.keyboard.press('Escape');
    await until(page, () => !document.querySelector('[data-testid="passage-view"]'));

    // A file deleted on disk: Open explains instead of failing silently.
    await page.evaluate(() => window.__hearthMock.deleteOnDisk('recipes/sourdough.md'));
    await hit.click();
    await view.getByRole('button', { name: 'Open file' }).click();
    await view.getByRole('alert').waitFor();
    assert.match(flat(await view.getByRole('alert').innerText()), /Couldn't open the file .*sourdough\.md is no longer there/);
    assertNoProblems(problems);
  });

  test('no folder yet: the screen says what adding one does', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await page.locator('[data-testid="folders-counts"]').waitFor();
    await card(page, '/home/ada/Notes').getByRole('button', { name: 'Remove Notes' }).click();
    await page.getByRole('button', { name: 'Remove folder' }).click();
    const empty = page.getByRole('region', { name: 'No folders yet' });
    await empty.waitFor();
    assert.match(flat(await empty.innerText()), /answers from it with the passages cited/);
    await empty.getByRole('button', { name: 'Add folder' }).click();
    await page.getByRole('textbox', { name: 'Folder' }).waitFor();
    assertNoProblems(problems);
  });
});

describe('Chat: an answer from the user’s files', () => {
  test('cites its sources; a source opens its passage', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url(undefined, 'chat'));
    const composer = page.getByRole('textbox', { name: /Message/ });
    await composer.waitFor();
    await page.waitForFunction(() => window.__hearthMock !== undefined);
    await page.evaluate(() => window.__hearthMock.setChatDelay(10));
    await composer.fill("What's the printer's Wi-Fi password?");
    await composer.press('Enter');
    const sources = page.getByTestId('answer-sources');
    await sources.waitFor();
    const answer = page.locator('article.message.assistant').last();
    assert.match(flat(await answer.locator('.text').innerText()), /tea-kettle-42 \[1\]/);
    assert.equal(flat(await sources.getByTestId('source').first().innerText()), '[1] printer.md lines 1-6 · Printer > Wi-Fi');
    await sources.getByTestId('source').first().click();
    const view = page.getByTestId('passage-view');
    await view.locator('[data-testid="passage-text"]').waitFor();
    assert.equal(await page.getByRole('dialog').locator('h2').first().innerText(), 'Source [1]');
    assert.match(flat(await view.getByTestId('passage-text').innerText()), /Wi-Fi password is tea-kettle-42/);
    await screenshot(page, 'chat-source-passage');
    await page.keyboard.press('Escape');

    assertNoProblems(problems);
  });
});
