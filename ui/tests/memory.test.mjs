// Browser tests of the Memory screen against the mock core (dist-mock/), served with the production CSP.
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

const url = (scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/memory`;

/** Open the Memory screen and wait for the list (or, with `empty`, the empty state). */
async function openMemory(page, scenario, { empty = false } = {}) {
  await page.goto(url(scenario));
  await page.locator('main h1').waitFor();
  if (empty) await page.getByRole('heading', { name: 'Nothing remembered yet' }).waitFor();
  else await page.locator('[data-memory-list] [data-memory-id]').first().waitFor();
}

const list = (page) => page.locator('[data-memory-list]');
const row = (page, id) => page.locator(`[data-memory-list] [data-memory-id="${id}"]`);
const rowIds = (page) => page.$$eval('[data-memory-list] [data-memory-id]', (els) => els.map((el) => el.dataset.memoryId));
const groupIds = (page, kind) =>
  page.$$eval(`[data-group="${kind}"] [data-memory-id]`, (els) => els.map((el) => el.dataset.memoryId));
const counts = async (page) => flat(await page.locator('[data-testid="memory-counts"]').innerText());
const undoToast = (page) => page.locator('[data-testid="undo-toast"]');
const detail = (page) => page.getByRole('region', { name: 'Memory details' });
const search = (page) => page.getByRole('searchbox', { name: 'Search memories' });
const filters = (page) => page.getByRole('search', { name: 'Search and filter memories' });

/** A full-page screenshot from the top, with the pointer out of the way. */
async function shot(page, name) {
  await page.mouse.move(5, 5);
  await page.evaluate(() => window.scrollTo(0, 0));
  return screenshot(page, name);
}

/** What a sighted user reads: the text without the screen-reader-only parts, whitespace collapsed. */
async function shown(locator) {
  return locator.evaluate((el) => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('.visually-hidden').forEach((hidden) => hidden.remove());
    return (copy.textContent ?? '').replace(/\s+/g, ' ').trim();
  });
}

/** The detail panel's history, oldest first, as shown. */
async function historyOf(page) {
  return page.$$eval('#memory-detail .timeline li', (items) =>
    items.map((li) => {
      const copy = li.cloneNode(true);
      copy.querySelectorAll('.visually-hidden').forEach((hidden) => hidden.remove());
      return (copy.textContent ?? '').replace(/\s+/g, ' ').trim();
    }),
  );
}

/** Wait until the list shows exactly these memory ids (in this order). */
async function untilRows(page, ids) {
  await until(
    page,
    (expected) =>
      JSON.stringify([...document.querySelectorAll('[data-memory-list] [data-memory-id]')].map((el) => el.dataset.memoryId)) ===
      JSON.stringify(expected),
    ids,
  );
}

/** Local midnight `days` days from today, in ms (the browser's time zone). */
async function midnight(page, days) {
  return page.evaluate((d) => {
    const now = new Date();
    return new Date(now.getFullYear(), now.getMonth(), now.getDate() + d).getTime();
  }, days);
}

/** `days` days from today as yyyy-mm-dd (local). */
async function isoDay(page, days) {
  return page.evaluate((d) => {
    const now = new Date();
    const day = new Date(now.getFullYear(), now.getMonth(), now.getDate() + d);
    return `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
  }, days);
}

const ALL_IDS = ['m-allergy', 'm-home', 'm-metric', 'm-veg', 'm-coffee', 'm-lisbon', 'm-race', 'm-quick', 'm-brief'];

const NO_FILTERS = { kind: null, query: null, removed: false, pinned: null, critical: null, source: null, from: null, to: null };

/** Two memories as Hearth exports them (JSON Lines, schema hearth.memory/1). */
function exportLines() {
  const line = (id, text, kind) =>
    JSON.stringify({
      schema: 'hearth.memory/1',
      id,
      text,
      kind,
      subject: null,
      importance: 0.5,
      pinned: false,
      critical: false,
      confidence: 1,
      source: { kind: 'manual' },
      event_at: null,
      created: 1_700_000_000_000,
      updated: 1_700_000_000_000,
      last_used: null,
      use_count: 0,
      status: 'active',
      removed_at: null,
      removal_awaits_consent: false,
      embed_model: null,
      history: [{ op: 'add', old_text: null, new_text: text, actor: 'user', at: 1_700_000_000_000, source: null }],
    });
  return `${line('m-x1', 'Plays the cello', 'fact')}\n${line('m-x2', 'Prefers trains to planes', 'preference')}\n`;
}

describe('Memory: list, search and filters', () => {
  test('lists memories by kind with counts, badges and sources; pinned and critical first', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.equal(await counts(page), '9 memories · 2 facts · 3 preferences · 2 episodes · 2 instructions');
    const headings = await list(page).locator('h2').allInnerTexts();
    assert.deepEqual(
      headings.map((h) => flat(h)),
      [
        'Facts 2 About you and your life',
        'Preferences 3 What you like, and how',
        'Episodes 2 Things that happened',
        'Instructions 2 How you want Hearth to answer',
      ],
    );
    assert.deepEqual(await rowIds(page), ALL_IDS);
    assert.deepEqual(await groupIds(page, 'fact'), ['m-allergy', 'm-home'], 'critical first');
    assert.deepEqual(await groupIds(page, 'preference'), ['m-metric', 'm-veg', 'm-coffee'], 'pinned first');
    assert.equal(await shown(row(page, 'm-allergy').locator('button.open')), 'Allergic to peanuts Critical last month');
    assert.equal(await shown(row(page, 'm-metric').locator('button.open')), 'Prefers metric units (kilograms, Celsius, kilometres) Pinned 2 weeks ago');
    assert.equal(await row(page, 'm-home').locator('.badge').count(), 0);
    // The source says itself to screen readers (an icon on screen).
    assert.match(flat(await row(page, 'm-race').locator('button.open').textContent()), /From a file\./);
    assert.match(flat(await row(page, 'm-brief').locator('button.open').textContent()), /Added by you\./);
    assert.equal(flat(await page.getByRole('tab', { name: /Recently removed/ }).innerText()), 'Recently removed 1');
    assert.equal(await page.getByRole('tab', { name: /Memories/ }).getAttribute('aria-selected'), 'true');
    assert.deepEqual((await ipcCalls(page, 'list_memories'))[0], NO_FILTERS);
    assert.equal(flat(await page.locator('[data-testid="memory-state"]').innerText()), 'Memory is On');
    assertNoProblems(problems);
  });

  test('search narrows the list as you type (once typing pauses), best match first; Clear brings everything back', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await search(page).pressSequentially('lyon', { delay: 30 });
    await untilRows(page, ['m-home', 'm-race']);
    assert.equal(flat(await list(page).locator('h2').innerText()), 'Best matches 2');
    // Results aren't grouped, so each says its kind.
    assert.deepEqual(await list(page).locator('.badge.kind').allInnerTexts(), ['Fact', 'Episode']);
    await page.getByText('2 matches, best first.').waitFor();
    const queries = (await ipcCalls(page, 'list_memories')).map((a) => a.query).filter((q) => q !== null);
    assert.deepEqual(queries, ['lyon'], 'one search once typing paused, not one per key');

    await search(page).fill('coffee');
    await untilRows(page, ['m-coffee']);
    await search(page).fill('bicycle');
    await page.getByText('No memories match “bicycle”.').waitFor();
    await filters(page).getByRole('button', { name: 'Clear filters' }).click();
    await untilRows(page, ALL_IDS);
    assert.equal(await search(page).inputValue(), '');
    assertNoProblems(problems);
  });

  test('filters: kind, source, pinned only, critical only and a date range narrow the list', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const f = filters(page);
    await f.getByLabel('Kind').selectOption({ label: 'Preferences' });
    await untilRows(page, ['m-metric', 'm-veg', 'm-coffee']);
    await f.getByLabel('Source').selectOption({ label: 'Added by you' });
    await untilRows(page, ['m-metric']);
    await f.getByLabel('Kind').selectOption({ label: 'All kinds' });
    await untilRows(page, ['m-allergy', 'm-metric', 'm-brief']);
    assert.deepEqual((await ipcCalls(page, 'list_memories')).at(-1), { ...NO_FILTERS, source: 'manual' });
    await page.getByText('3 of 9 memories shown.').waitFor();

    await f.getByLabel('Source').selectOption({ label: 'Any source' });
    await f.getByRole('checkbox', { name: 'Pinned only' }).check();
    await untilRows(page, ['m-metric']);
    await f.getByRole('checkbox', { name: 'Critical only' }).check();
    await page.getByText('No memories match these filters.').waitFor();
    assert.deepEqual((await ipcCalls(page, 'list_memories')).at(-1), { ...NO_FILTERS, pinned: true, critical: true });
    await f.getByRole('checkbox', { name: 'Pinned only' }).uncheck();
    await untilRows(page, ['m-allergy']);
    await page.getByRole('button', { name: 'Clear filters' }).first().click();
    await untilRows(page, ALL_IDS);

    // Created in the last three days (local days: the start of the first, the start of the day after the last).
    await f.getByLabel('Created from').fill(await isoDay(page, -3));
    await f.getByLabel('to', { exact: true }).fill(await isoDay(page, 0));
    await untilRows(page, ['m-veg', 'm-lisbon', 'm-quick']);
    assert.deepEqual((await ipcCalls(page, 'list_memories')).at(-1), {
      ...NO_FILTERS,
      from: await midnight(page, -3),
      to: await midnight(page, 1),
    });
    assertNoProblems(problems);
  });

  test('store_changed (another process changed the database) reloads the list and the counts', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const added = await page.evaluate(() => window.__hearthMock.addMemoryElsewhere('Has a cat called Miso', 'fact'));
    await row(page, added.id).waitFor();
    assert.match(flat(await row(page, added.id).innerText()), /^Has a cat called Miso/);
    await until(page, () => document.querySelector('[data-testid="memory-counts"]')?.textContent?.includes('10 memories'));
    assert.equal(await counts(page), '10 memories · 3 facts · 3 preferences · 2 episodes · 2 instructions');
    assertNoProblems(problems);
  });
});

describe('Memory: add, edit, pin', () => {
  test('Add memory: an empty one is refused; a pinned one is added first in its group, with its badge', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const addButton = page.getByRole('button', { name: 'Add memory', exact: true }).first();
    await addButton.click();
    assert.equal(await addButton.getAttribute('aria-expanded'), 'true');
    const form = page.getByRole('region', { name: 'Add a memory' });
    const text = form.getByRole('textbox', { name: 'What should Hearth remember?' });
    await until(page, () => document.activeElement?.tagName === 'TEXTAREA');

    await text.press('Enter');
    await form.getByRole('alert').filter({ hasText: 'Write what Hearth should remember.' }).waitFor();
    assert.equal(await text.getAttribute('aria-invalid'), 'true');
    assert.deepEqual(await ipcCalls(page, 'add_memory'), []);

    await text.fill('Answer in French when I write in French');
    await form.getByLabel('Kind').selectOption('instruction');
    await form.getByRole('checkbox', { name: 'Pin', exact: true }).check();
    await text.press('Enter');
    await form.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'add_memory'), [
      { text: 'Answer in French when I write in French', kind: 'instruction', pinned: true, critical: false },
    ]);
    await until(page, () => document.querySelectorAll('[data-group="instruction"] [data-memory-id]').length === 3);
    const [first] = await groupIds(page, 'instruction');
    assert.match(flat(await row(page, first).innerText()), /^Answer in French when I write in French Pinned/);
    assert.equal(await counts(page), '10 memories · 2 facts · 3 preferences · 2 episodes · 3 instructions');
    await page.getByText('Memory added.').waitFor();
    await until(page, (id) => document.activeElement?.closest('[data-memory-id]')?.getAttribute('data-memory-id') === id, first);

    // Escape closes the form without adding.
    await addButton.click();
    await form.getByRole('textbox').fill('Never mind');
    await page.keyboard.press('Escape');
    await form.waitFor({ state: 'detached' });
    assert.equal((await ipcCalls(page, 'add_memory')).length, 1);
    assertNoProblems(problems);
  });

  test('inline edit: Escape cancels, an empty text is refused, Enter saves; the history shows old → new', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const coffee = row(page, 'm-coffee');
    await coffee.getByRole('button', { name: 'Edit “Takes coffee black, no sugar”' }).click();
    const box = coffee.getByRole('textbox', { name: 'Edit “Takes coffee black, no sugar”' });
    await until(page, () => document.activeElement?.tagName === 'TEXTAREA');
    await page.keyboard.type(' ever');
    await page.keyboard.press('Escape');
    await box.waitFor({ state: 'detached' });
    assert.equal(flat(await coffee.locator('.text').innerText()), 'Takes coffee black, no sugar');
    await until(page, () => document.activeElement?.matches('[data-memory-id="m-coffee"] button.open'));

    // F2 edits the focused memory too.
    await page.keyboard.press('F2');
    await box.waitFor();
    await box.fill('   ');
    await box.press('Enter');
    await coffee.getByRole('alert').filter({ hasText: "A memory can't be empty." }).waitFor();
    assert.deepEqual(await ipcCalls(page, 'edit_memory'), []);

    await box.fill('Takes coffee with oat milk');
    await box.press('Enter');
    await box.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'edit_memory'), [{ id: 'm-coffee', text: 'Takes coffee with oat milk' }]);
    assert.equal(flat(await coffee.locator('.text').innerText()), 'Takes coffee with oat milk');

    await coffee.locator('button.open').click();
    const panel = detail(page);
    await panel.locator('.timeline li').nth(2).waitFor();
    const last = panel.locator('.timeline li').last();
    assert.equal(await last.getAttribute('data-op'), 'update');
    assert.equal(
      (await historyOf(page)).at(-1),
      'Changed by you · just now Takes coffee black, no sugar → Takes coffee with oat milk',
    );
    assert.equal(flat(await last.locator('.old').textContent()), 'Before: Takes coffee black, no sugar');
    assert.equal(flat(await last.locator('.new').textContent()), 'After: Takes coffee with oat milk');
    assertNoProblems(problems);
  });

  test('Pin moves a memory to the top of its group with a badge; Unpin lets the pinned one lead again', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.deepEqual(await groupIds(page, 'preference'), ['m-metric', 'm-veg', 'm-coffee']);
    await row(page, 'm-coffee').getByRole('button', { name: 'Pin “Takes coffee black, no sugar”' }).click();
    await until(page, () => document.querySelector('[data-group="preference"] [data-memory-id]')?.getAttribute('data-memory-id') === 'm-coffee');
    assert.deepEqual(await groupIds(page, 'preference'), ['m-coffee', 'm-metric', 'm-veg']);
    assert.equal(await shown(row(page, 'm-coffee').locator('button.open')), 'Takes coffee black, no sugar Pinned 2 months ago');
    assert.deepEqual(await ipcCalls(page, 'set_memory_pinned'), [{ id: 'm-coffee', pinned: true }]);
    await page.getByText('Pinned: always in the prompt.').waitFor();
    // Focus stays on the button, which now unpins.
    await until(page, () => document.activeElement?.textContent?.trim().startsWith('Unpin'));
    await page.keyboard.press('Enter');
    await until(page, () => document.querySelector('[data-group="preference"] [data-memory-id]')?.getAttribute('data-memory-id') === 'm-metric');
    assert.deepEqual(await groupIds(page, 'preference'), ['m-metric', 'm-coffee', 'm-veg'], 'then the most recently changed');
    assert.equal(await row(page, 'm-coffee').locator('.badge.pinned').count(), 0);
    assert.deepEqual(await ipcCalls(page, 'set_memory_pinned'), [
      { id: 'm-coffee', pinned: true },
      { id: 'm-coffee', pinned: false },
    ]);
    assertNoProblems(problems);
  });
});

describe('Memory: delete with Undo', () => {
  test('Delete hides the memory at once; Undo brings it back and the core is never asked to delete', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.evaluate(() => window.__hearthMock.setUndoDelay(800));
    await row(page, 'm-coffee').getByRole('button', { name: 'Delete “Takes coffee black, no sugar”' }).click();
    await row(page, 'm-coffee').waitFor({ state: 'detached' });
    assert.equal(await counts(page), '8 memories · 2 facts · 2 preferences · 2 episodes · 2 instructions');
    assert.equal(flat(await undoToast(page).innerText()), 'Memory deleted · Undo');
    assert.equal(await undoToast(page).getAttribute('aria-live'), 'polite');
    // Focus moved to the next memory.
    await until(page, () => document.activeElement?.closest('[data-memory-id]')?.getAttribute('data-memory-id') === 'm-lisbon');

    await undoToast(page).getByRole('button', { name: 'Undo' }).click();
    await row(page, 'm-coffee').waitFor();
    assert.equal(flat(await undoToast(page).innerText()), '');
    assert.equal(await counts(page), '9 memories · 2 facts · 3 preferences · 2 episodes · 2 instructions');
    await until(page, () => document.activeElement?.closest('[data-memory-id]')?.getAttribute('data-memory-id') === 'm-coffee');
    // Well past the Undo delay: still no delete.
    await page.waitForTimeout(1200);
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), []);
    assert.ok((await page.evaluate(() => window.__hearthMock.memories())).some((m) => m.id === 'm-coffee'));

    // Ctrl+Z undoes too (outside text fields).
    await page.evaluate(() => window.__hearthMock.setUndoDelay(10_000));
    await page.keyboard.press('Delete');
    await row(page, 'm-coffee').waitFor({ state: 'detached' });
    await page.keyboard.press('Control+z');
    await row(page, 'm-coffee').waitFor();
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), []);
    assertNoProblems(problems);
  });

  test('without Undo, the core deletes the memory once the toast expires', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.evaluate(() => window.__hearthMock.setUndoDelay(300));
    await row(page, 'm-coffee').locator('button.open').focus();
    await page.keyboard.press('Delete');
    await row(page, 'm-coffee').waitFor({ state: 'detached' });
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'delete_memories'));
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), [{ ids: ['m-coffee'] }]);
    await until(page, () => document.querySelector('[data-testid="undo-toast"]')?.textContent?.trim() === '');
    assert.ok(!(await page.evaluate(() => window.__hearthMock.memories())).some((m) => m.id === 'm-coffee'), 'really gone');
    // It stays gone after the list is read again.
    await page.waitForTimeout(200);
    assert.equal(await row(page, 'm-coffee').count(), 0);
    assert.equal(await counts(page), '8 memories · 2 facts · 2 preferences · 2 episodes · 2 instructions');
    assertNoProblems(problems);
  });

  test('bulk delete: two selected memories go together, with one Undo', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await row(page, 'm-coffee').getByRole('checkbox', { name: 'Select “Takes coffee black, no sugar”' }).check();
    await row(page, 'm-race').getByRole('checkbox').check();
    const bar = page.locator('[data-testid="bulk-bar"]');
    assert.match(flat(await bar.innerText()), /^2 selected Select all 9 Delete Clear$/);
    await bar.getByRole('button', { name: 'Delete' }).click();
    await row(page, 'm-coffee').waitFor({ state: 'detached' });
    assert.equal(await row(page, 'm-race').count(), 0);
    assert.equal(await bar.count(), 0);
    assert.equal(flat(await undoToast(page).innerText()), '2 memories deleted · Undo');
    await undoToast(page).getByRole('button', { name: 'Undo' }).click();
    await row(page, 'm-coffee').waitFor();
    await row(page, 'm-race').waitFor();
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), []);

    // Clear empties the selection.
    await row(page, 'm-coffee').getByRole('checkbox').check();
    await bar.getByRole('button', { name: 'Clear' }).click();
    await bar.waitFor({ state: 'detached' });
    assert.equal(await row(page, 'm-coffee').getByRole('checkbox').isChecked(), false);

    await page.evaluate(() => window.__hearthMock.setUndoDelay(200));
    await row(page, 'm-coffee').getByRole('checkbox').check();
    await row(page, 'm-race').getByRole('checkbox').check();
    await bar.getByRole('button', { name: 'Delete' }).click();
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'delete_memories'));
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), [{ ids: ['m-coffee', 'm-race'] }]);
    await until(page, () => document.querySelector('[data-testid="memory-counts"]')?.textContent?.includes('7 memories'));
    assertNoProblems(problems);
  });

  test('leaving the screen, or the window going away, deletes what waits at once', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await row(page, 'm-coffee').getByRole('button', { name: /^Delete/ }).click();
    await row(page, 'm-coffee').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), []);
    await page.keyboard.press('Control+1');
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'delete_memories'));
    assert.deepEqual(await ipcCalls(page, 'delete_memories'), [{ ids: ['m-coffee'] }]);

    await page.keyboard.press('Control+2');
    await page.locator('[data-memory-list] [data-memory-id]').first().waitFor();
    assert.equal(await row(page, 'm-coffee').count(), 0);
    await row(page, 'm-brief').getByRole('button', { name: /^Delete/ }).click();
    await row(page, 'm-brief').waitFor({ state: 'detached' });
    await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false })));
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'delete_memories').length === 2);
    assert.deepEqual((await ipcCalls(page, 'delete_memories'))[1], { ids: ['m-brief'] });
    assertNoProblems(problems);
  });
});

describe('Memory: recently removed', () => {
  test('explains itself; Empty asks first; Restore moves a memory back', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const tab = page.getByRole('tab', { name: /Recently removed/ });
    await tab.click();
    await row(page, 'm-nurse').waitFor();
    assert.equal(await tab.getAttribute('aria-selected'), 'true');
    const text = flat(await page.getByRole('tabpanel').innerText());
    assert.match(text, /Hearth removed these when they seemed outdated or wrong\. Memories Hearth removed stay here until you restore them or empty this list\./);
    assert.doesNotMatch(text, /30 days|deleted for good in/);
    assert.equal(
      await shown(row(page, 'm-nurse').locator('button.open')),
      'Works night shifts as a nurse Removed by Hearth 3 days ago',
    );
    assert.deepEqual((await ipcCalls(page, 'list_memories')).at(-1), { ...NO_FILTERS, removed: true });

    // Empty asks first; Cancel keeps everything.
    await page.getByRole('button', { name: 'Empty', exact: true }).click();
    const confirm = page.getByRole('group', { name: 'Empty recently removed?' });
    await confirm.waitFor();
    assert.equal(flat(await confirm.locator('p').innerText()), "Delete the removed memory for good? This can't be undone.");
    assert.deepEqual(await ipcCalls(page, 'empty_removed_memories'), []);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });

    await row(page, 'm-nurse').getByRole('button', { name: 'Restore “Works night shifts as a nurse”' }).click();
    await page.getByText('Nothing was removed recently.').waitFor();
    assert.deepEqual(await ipcCalls(page, 'restore_memory'), [{ id: 'm-nurse' }]);
    assert.equal(flat(await tab.innerText()), 'Recently removed 0');
    assert.equal(flat(await page.getByRole('tab', { name: /Memories/ }).innerText()), 'Memories 10');
    await page.getByRole('tab', { name: /Memories/ }).click();
    await row(page, 'm-nurse').waitFor();
    assert.deepEqual(await groupIds(page, 'fact'), ['m-allergy', 'm-nurse', 'm-home'], 'restored: just updated');
    assertNoProblems(problems);
  });

  test('Empty, once confirmed, deletes the removed memories for good', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    // Arrow keys move between the tabs.
    await page.getByRole('tab', { name: /Memories/ }).focus();
    await page.keyboard.press('ArrowRight');
    await row(page, 'm-nurse').waitFor();
    await until(page, () => document.activeElement?.id === 'tab-removed');
    await page.getByRole('button', { name: 'Empty', exact: true }).click();
    await page.getByRole('group', { name: 'Empty recently removed?' }).getByRole('button', { name: 'Empty' }).click();
    await page.getByText('Nothing was removed recently.').waitFor();
    assert.deepEqual(await ipcCalls(page, 'empty_removed_memories'), [{}]);
    await page.getByText('1 memory deleted for good.').waitFor();
    assert.ok(!(await page.evaluate(() => window.__hearthMock.memories())).some((m) => m.id === 'm-nurse'));
    assertNoProblems(problems);
  });
});

describe('Memory: details', () => {
  test('the panel shows text, provenance, usage and history; Escape closes it and focus goes back', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    // Keyboard: arrows move between memories, Enter opens one.
    await row(page, 'm-allergy').locator('button.open').focus();
    await page.keyboard.press('ArrowDown');
    await until(page, () => document.activeElement?.matches('[data-memory-id="m-home"] button.open'));
    await page.keyboard.press('Enter');
    const panel = detail(page);
    await panel.locator('.timeline').waitFor();
    await until(page, () => document.activeElement?.id === 'memory-detail-title');
    assert.deepEqual(await ipcCalls(page, 'get_memory'), [{ id: 'm-home' }]);
    assert.equal(await row(page, 'm-home').locator('button.open').getAttribute('aria-current'), 'true');
    assert.equal(await panel.locator('[data-testid="detail-text"]').innerText(), 'Lives in Lyon, France');
    const field = (name) => shown(panel.locator(`dd[data-field="${name}"]`));
    assert.equal(await field('source'), 'Learned in conversation “Three days in Lisbon” Open');
    assert.equal(await field('subject'), 'home city');
    assert.equal(await field('importance'), 'High (0.8)');
    assert.equal(await field('confidence'), '90%');
    assert.equal(await field('usage'), 'Used 4 times, last 2 days ago');
    assert.equal(await field('created'), '3 weeks ago');
    assert.equal(await field('updated'), '6 days ago');
    assert.deepEqual(await historyOf(page), [
      'Added by Hearth · 3 weeks ago “Lives in Paris”',
      'Changed by Hearth · 6 days ago Lives in Paris → Lives in Lyon, France',
    ]);

    // Editing in the panel: Escape cancels the edit and keeps the panel; Enter saves.
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    const text = panel.getByRole('textbox', { name: 'Memory text' });
    await text.fill('Lives in Lyon');
    await page.keyboard.press('Escape');
    await text.waitFor({ state: 'detached' });
    assert.equal(await panel.locator('[data-testid="detail-text"]').innerText(), 'Lives in Lyon, France');
    await until(page, () => document.activeElement?.id === 'memory-detail-title');
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    await text.fill('Lives in Lyon, France, near the Croix-Rousse');
    await text.press('Enter');
    await until(page, () => document.querySelector('[data-testid="detail-text"]')?.textContent === 'Lives in Lyon, France, near the Croix-Rousse');
    assert.deepEqual(await ipcCalls(page, 'edit_memory'), [{ id: 'm-home', text: 'Lives in Lyon, France, near the Croix-Rousse' }]);
    await until(page, () => document.querySelectorAll('#memory-detail .timeline li').length === 3);
    assert.equal(
      (await historyOf(page)).at(-1),
      'Changed by you · just now Lives in Lyon, France → Lives in Lyon, France, near the Croix-Rousse',
    );
    assert.equal(flat(await row(page, 'm-home').locator('.text').innerText()), 'Lives in Lyon, France, near the Croix-Rousse');

    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.matches('[data-memory-id="m-home"] button.open'));

    // Other sources and usage.
    await row(page, 'm-veg').locator('button.open').click();
    await until(page, () => document.querySelector('#memory-detail')?.getAttribute('data-memory-id') === 'm-veg');
    await panel.locator('dd[data-field="usage"]').waitFor();
    assert.equal(await field('usage'), 'Not used yet');
    assert.equal(await field('source'), 'Learned in conversation “Dinner with chickpeas” Open');
    await row(page, 'm-race').locator('button.open').click();
    await until(page, () => document.querySelector('#memory-detail')?.getAttribute('data-memory-id') === 'm-race');
    await panel.locator('dd[data-field="event"]').waitFor();
    assert.equal(await field('source'), 'From file /home/alex/Documents/journal/2024-10.md');
    assert.equal(await field('event'), 'Oct 20, 2024');
    await row(page, 'm-coffee').locator('button.open').click();
    await until(page, () => document.querySelector('#memory-detail')?.getAttribute('data-memory-id') === 'm-coffee');
    await until(page, () => document.querySelector('dd[data-field="source"]')?.textContent?.trim() === 'Imported');
    assert.equal(await field('usage'), 'Used 2 times, last 1 week ago');
    // The words around it where it came from, and that only search reads them.
    assert.equal(
      await field('context'),
      'Sam: How do you take your coffee? Sam: Noted, black it is. Search reads these words too; the prompt carries only the memory.',
    );
    assert.equal(await panel.locator('dd[data-field="context"]').count(), 1);
    await screenshot(page, 'memory-detail-context');
    await row(page, 'm-allergy').locator('button.open').click();
    await until(page, () => document.querySelector('#memory-detail')?.getAttribute('data-memory-id') === 'm-allergy');
    await until(page, () => document.querySelector('dd[data-field="source"]')?.textContent?.trim() === 'Added by you');
    assert.equal(await panel.locator('dd[data-field="context"]').count(), 0, 'no context, no row');
    assert.deepEqual(await historyOf(page), [
      'Added by you · last month',
      'Marked critical by you · last month',
    ]);

    // The panel's own actions: Mark critical / Not critical.
    await panel.getByRole('button', { name: 'Not critical' }).click();
    await panel.getByRole('button', { name: 'Mark critical' }).waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_memory_critical'), [{ id: 'm-allergy', critical: false }]);
    await panel.locator('.timeline li').nth(2).waitFor();
    assert.equal((await historyOf(page)).at(-1), 'No longer critical by you · just now');
    await panel.getByRole('button', { name: 'Close the details' }).click();
    await panel.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.matches('[data-memory-id="m-allergy"] button.open'));
    assertNoProblems(problems);
  });

  test('"Open" jumps to the conversation in Chat and marks the message the memory was learned from', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await row(page, 'm-veg').locator('button.open').click();
    const panel = detail(page);
    await panel.getByRole('button', { name: /^Open/ }).click();
    await until(page, () => location.hash === '#/chat');
    const message = page.locator('[role="log"] article[data-message-id="1"]');
    await until(page, () => document.querySelector('[role="log"] article[data-message-id="1"]')?.getAttribute('data-highlighted') === 'true');
    await until(page, () => document.activeElement?.matches('article[data-message-id="1"]'));
    assert.equal(flat(await message.locator('.text').innerText()), 'What can I cook tonight with chickpeas and spinach?');
    assert.equal(
      await page.locator('nav[aria-label="Conversations"] [aria-current="true"]').innerText().then((s) => s.split('\n')[0]),
      'Dinner with chickpeas',
    );
    assert.equal(await page.locator('[data-highlighted="true"]').count(), 1);
    assert.deepEqual(await ipcCalls(page, 'get_messages'), [{ conversationId: 'c-recipes' }]);
    assertNoProblems(problems);
  });
});

describe('Memory: export, import, forget', () => {
  test('Export warns that the file is not encrypted before writing it, then shows where it went', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const more = page.getByRole('button', { name: 'More' });
    await more.click();
    await page.getByRole('menuitem', { name: 'Export…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Export memories' });
    await dialog.waitFor();
    const warning = flat(await dialog.innerText());
    assert.match(warning, /The export is not encrypted/);
    assert.match(warning, /anyone who can read the file can read your memories/);
    assert.match(warning, /The file goes to your Downloads folder\./);
    assert.deepEqual(await ipcCalls(page, 'export_memories'), [], 'nothing written before the user confirms');
    await dialog.getByRole('radio', { name: /Markdown/ }).check();
    await dialog.getByRole('button', { name: 'Export' }).click();
    const path = dialog.locator('[data-testid="export-path"]');
    await path.waitFor();
    assert.deepEqual(await ipcCalls(page, 'export_memories'), [{ format: 'md' }]);
    assert.equal(await path.innerText(), `/home/alex/Downloads/hearth-memories-${await isoDay(page, 0)}.md`);
    assert.match(flat(await dialog.innerText()), /Exported 9 memories/);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.textContent?.trim() === 'More');

    // Menu by keyboard: ↓ opens on the first item; Escape closes back to the button.
    await page.keyboard.press('ArrowDown');
    await until(page, () => document.activeElement?.getAttribute('role') === 'menuitem');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Export…');
    await page.keyboard.press('Escape');
    await until(page, () => document.activeElement?.textContent?.trim() === 'More');
    assert.equal(await page.getByRole('menu').count(), 0);
    assertNoProblems(problems);
  });

  test('Import adds the lines of a .jsonl file, skips them the second time, and names a bad line', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.getByRole('button', { name: 'More' }).click();
    await page.getByRole('menuitem', { name: 'Import…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import memories' });
    const file = dialog.getByLabel('File to import');
    const importButton = dialog.getByRole('button', { name: 'Import', exact: true });
    assert.ok(await importButton.isDisabled(), 'nothing to import yet');
    const buffer = Buffer.from(exportLines());
    await file.setInputFiles({ name: 'hearth-memories.jsonl', mimeType: 'application/jsonl', buffer });
    await importButton.click();
    const result = dialog.locator('[data-testid="import-result"]');
    await result.waitFor();
    assert.equal(flat(await result.innerText()), '2 added · 0 skipped (already known)');
    assert.deepEqual(await ipcCalls(page, 'import_memories'), [{ content: exportLines() }]);

    await file.setInputFiles({ name: 'hearth-memories.jsonl', mimeType: 'application/jsonl', buffer });
    await importButton.click();
    await until(page, () => document.querySelector('[data-testid="import-result"]')?.textContent?.includes('0 added'));
    assert.equal(flat(await result.innerText()), '0 added · 2 skipped (already known)');

    await file.setInputFiles({
      name: 'broken.jsonl',
      mimeType: 'application/jsonl',
      buffer: Buffer.from(`${exportLines().split('\n')[0]}\nnot json at all\n`),
    });
    await importButton.click();
    const alert = dialog.getByRole('alert');
    await alert.waitFor();
    assert.match(flat(await alert.innerText()), /^Couldn't import this file Line 2 is not a Hearth memory/);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // The imported memories are listed.
    await until(page, () => document.querySelector('[data-testid="memory-counts"]')?.textContent?.includes('11 memories'));
    assert.match(flat(await page.locator('[data-group="fact"]').innerText()), /Plays the cello/);
    assertNoProblems(problems);
  });

  test('Forget everything needs "forget" typed first; then the empty state explains memory', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.getByRole('button', { name: 'More' }).click();
    await page.getByRole('menuitem', { name: 'Forget…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Forget memories' });
    await dialog.waitFor();
    assert.ok(await dialog.getByRole('radio', { name: /Everything/ }).isChecked());
    assert.match(flat(await dialog.innerText()), /All 10 memories, including recently removed ones\./);
    const button = dialog.getByRole('button', { name: 'Forget everything' });
    assert.ok(await button.isDisabled());
    const confirm = dialog.getByRole('textbox', { name: 'Type “forget” to confirm' });
    await confirm.fill('forge');
    assert.ok(await button.isDisabled());
    await confirm.fill('forget');
    assert.ok(await button.isEnabled());
    await button.click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'forget_memories'), [{ all: true, from: null, to: null }]);
    await page.getByRole('heading', { name: 'Nothing remembered yet' }).waitFor();
    await page.getByText('10 memories forgotten for good.').waitFor();
    assert.equal(await page.getByRole('tab').count(), 0);
    assertNoProblems(problems);
  });

  test('Forget between two dates sends local-day boundaries and says how many first', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await page.getByRole('button', { name: 'More' }).click();
    await page.getByRole('menuitem', { name: 'Forget…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Forget memories' });
    await dialog.getByRole('radio', { name: /between two dates/ }).check();
    await dialog.getByLabel('First day', { exact: true }).fill(await isoDay(page, -3));
    await dialog.getByLabel('Last day', { exact: true }).fill(await isoDay(page, 0));
    await until(page, () => document.querySelector('[data-testid="forget-range-count"]')?.textContent?.includes('3 memories were created'));
    await dialog.getByRole('button', { name: 'Forget 3 memories' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'forget_memories'), [
      { all: false, from: await midnight(page, -3), to: await midnight(page, 1) },
    ]);
    await untilRows(page, ['m-allergy', 'm-home', 'm-metric', 'm-coffee', 'm-race', 'm-brief']);
    assert.equal(await counts(page), '6 memories · 2 facts · 2 preferences · 1 episode · 1 instruction');
    assertNoProblems(problems);
  });
});

describe('Memory: settings, budget and empty state', () => {
  test('the Memory switch turns memory off (the list stays editable); Pause learning pauses learning', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const memory = page.getByRole('switch', { name: 'Memory', exact: true });
    const pause = page.getByRole('switch', { name: 'Pause learning' });
    assert.ok(await memory.isChecked());
    await memory.uncheck();
    await page.locator('[data-testid="memory-off"]').waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_memory_settings'), [{ enabled: false, extractionPaused: false }]);
    assert.match(flat(await page.locator('[data-testid="memory-off"]').innerText()), /^Memory is off Hearth doesn't use these memories .* You can still look through, edit and delete what is here\.$/);
    assert.equal(flat(await page.locator('[data-testid="memory-state"]').innerText()), 'Memory is Off');
    assert.ok(await pause.isDisabled());

    // Still editable while off.
    await row(page, 'm-coffee').getByRole('button', { name: /^Edit/ }).click();
    await row(page, 'm-coffee').getByRole('textbox').fill('Takes coffee with milk');
    await row(page, 'm-coffee').getByRole('textbox').press('Enter');
    await until(page, () => document.querySelector('[data-memory-id="m-coffee"] .text')?.textContent === 'Takes coffee with milk');

    await memory.check();
    await page.locator('[data-testid="memory-off"]').waitFor({ state: 'detached' });
    await pause.check();
    await until(page, () => document.querySelector('[data-testid="memory-state"]')?.textContent?.includes('Learning paused'));
    assert.deepEqual(await ipcCalls(page, 'set_memory_settings'), [
      { enabled: false, extractionPaused: false },
      { enabled: true, extractionPaused: false },
      { enabled: true, extractionPaused: true },
    ]);
    // Read once, when the screen opened; every change came back from set_memory_settings.
    assert.deepEqual(await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'get_memory_settings').length), 1);
    assertNoProblems(problems);
  });

  test('memory-off scenario: the screen says memory is off', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'memory-off');
    await page.locator('[data-testid="memory-off"]').waitFor();
    assert.equal(await page.getByRole('switch', { name: 'Memory', exact: true }).isChecked(), false);
    assert.equal(await rowIds(page).then((ids) => ids.length), 9);
    assertNoProblems(problems);
  });

  test('near the budget: a warning says how much of the 1,000 tokens pinned and critical memories take', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.equal(await page.locator('[data-testid="budget-warning"]').count(), 0);
    await openMemory(page, 'memory-near-budget');
    const warning = page.locator('[data-testid="budget-warning"]');
    await warning.waitFor();
    const match = /Pinned and critical memories take ([\d,]+) of the 1,000 tokens memory may use in each prompt; others may not fit\./.exec(
      flat(await warning.innerText()),
    );
    assert.ok(match, flat(await warning.innerText()));
    assert.ok(Number(match[1].replace(/,/g, '')) > 800);
    assertNoProblems(problems);
  });

  test('empty state: what memory is, that it is encrypted here, how to see it all and turn it off, with the switch', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page, 'memory-empty', { empty: true });
    const text = flat(await page.locator('main').innerText());
    assert.match(text, /As you chat, Hearth notes facts about you, your preferences, things that happened and how you like answers/);
    assert.match(text, /Memories are stored encrypted on this computer\./);
    assert.match(text, /You can see, edit and delete every memory here, at any time\./);
    assert.match(text, /Don't want Hearth to remember\? Turn memory off:/);
    assert.equal(await page.getByRole('tab').count(), 0);
    assert.equal(await page.locator('[data-testid="memory-counts"]').count(), 0);
    const empty = page.getByRole('region', { name: 'Nothing remembered yet' });
    await empty.getByRole('switch', { name: 'Memory', exact: true }).uncheck();
    assert.deepEqual(await ipcCalls(page, 'set_memory_settings'), [{ enabled: false, extractionPaused: false }]);
    await page.locator('[data-testid="memory-off"]').waitFor();
    // Add a first memory from here.
    await page.getByRole('button', { name: 'Add memory', exact: true }).click();
    await page.getByRole('textbox', { name: 'What should Hearth remember?' }).fill('Lives in Lyon');
    await page.keyboard.press('Enter');
    await row(page, await page.evaluate(() => window.__hearthMock.memories()[0].id)).waitFor();
    assert.equal(await counts(page), '1 memory · 1 fact · 0 preferences · 0 episodes · 0 instructions');
    assertNoProblems(problems);
  });
});

describe('Memory: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations: list, detail, edit, removed, dialogs, toast (${colorScheme}); screenshots`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openMemory(page);
      await assertAxeClean(page, `memory list (${colorScheme})`);
      await shot(page, `memory-list-${colorScheme}`);

      await row(page, 'm-home').locator('button.open').click();
      await detail(page).locator('.timeline').waitFor();
      await assertAxeClean(page, `memory detail (${colorScheme})`);
      await shot(page, `memory-detail-${colorScheme}`);

      await row(page, 'm-coffee').getByRole('button', { name: /^Edit/ }).click();
      await row(page, 'm-coffee').getByRole('textbox').fill('');
      await row(page, 'm-coffee').getByRole('textbox').press('Enter');
      await row(page, 'm-coffee').getByRole('alert').waitFor();
      await row(page, 'm-coffee').getByRole('checkbox').check();
      await row(page, 'm-race').getByRole('checkbox').check();
      await assertAxeClean(page, `memory edit + selection (${colorScheme})`);
      await row(page, 'm-coffee').getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('button', { name: 'Add memory', exact: true }).click();
      await assertAxeClean(page, `memory add form (${colorScheme})`);
      await page.keyboard.press('Escape');

      await row(page, 'm-veg').getByRole('button', { name: /^Delete/ }).click();
      await undoToast(page).getByRole('button', { name: 'Undo' }).waitFor();
      await assertAxeClean(page, `memory undo toast (${colorScheme})`);
      await shot(page, `memory-undo-${colorScheme}`);
      await undoToast(page).getByRole('button', { name: 'Undo' }).click();

      await page.getByRole('tab', { name: /Recently removed/ }).click();
      await row(page, 'm-nurse').waitFor();
      await page.getByRole('button', { name: 'Empty', exact: true }).click();
      await assertAxeClean(page, `memory recently removed (${colorScheme})`);
      await shot(page, `memory-removed-${colorScheme}`);
      await page.getByRole('tab', { name: /Memories/ }).click();

      for (const item of ['Export…', 'Import…', 'Forget…']) {
        await page.getByRole('button', { name: 'More' }).click();
        await assertAxeClean(page, `memory menu (${colorScheme})`);
        await page.getByRole('menuitem', { name: item }).click();
        await page.getByRole('dialog').waitFor();
        await assertAxeClean(page, `memory dialog ${item} (${colorScheme})`);
        if (item === 'Export…') await shot(page, `memory-export-${colorScheme}`);
        await page.keyboard.press('Escape');
        await page.getByRole('dialog').waitFor({ state: 'detached' });
      }
      assertNoProblems(problems);
    });

    test(`axe finds no violations: empty state, memory off, near budget (${colorScheme}); screenshots`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openMemory(page, 'memory-empty', { empty: true });
      await assertAxeClean(page, `memory empty (${colorScheme})`);
      await shot(page, `memory-empty-${colorScheme}`);
      await openMemory(page, 'memory-off');
      await page.locator('[data-testid="memory-off"]').waitFor();
      await assertAxeClean(page, `memory off (${colorScheme})`);
      await openMemory(page, 'memory-near-budget');
      await page.locator('[data-testid="budget-warning"]').waitFor();
      await assertAxeClean(page, `memory near budget (${colorScheme})`);
      await shot(page, `memory-near-budget-${colorScheme}`);
      assertNoProblems(problems);
    });
  }
});
