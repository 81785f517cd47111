// Browser tests of Hearth's proposals (suggested changes to pinned or critical memories) against
// the mock core (dist-mock/): the Memory screen's banner and detail panel, and the chip in Chat.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import {
  UI_ROOT,
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

const memoryUrl = () => `${server.origin}/index.html#/memory`;

async function openMemory(page) {
  await page.goto(memoryUrl());
  await page.locator('main h1').waitFor();
  await page.locator('[data-memory-list] [data-memory-id]').first().waitFor();
  await banner(page).locator('[data-proposal-id]').first().waitFor();
}

const banner = (page) => page.locator('[data-testid="proposals"]');
const proposal = (page, id) => banner(page).locator(`[data-proposal-id="${id}"]`);
const row = (page, id) => page.locator(`[data-memory-list] [data-memory-id="${id}"]`);
const detail = (page) => page.getByRole('region', { name: 'Memory details' });

/** What a sighted user reads: the text without the screen-reader-only parts, whitespace collapsed. */
async function shown(locator) {
  return locator.evaluate((el) => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('.visually-hidden').forEach((hidden) => hidden.remove());
    return (copy.textContent ?? '').replace(/\s+/g, ' ').trim();
  });
}

const rowText = (page, id) => row(page, id).locator('button.open .text').innerText();

describe('Memory: Hearth’s proposals', () => {
  test('the banner lists both seeded proposals: text now, the suggestion, why and where from', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.equal(
      flat(await banner(page).getByRole('heading', { level: 2 }).innerText()),
      'Hearth suggests changes to 2 protected memories',
    );
    assert.deepEqual(
      await banner(page).locator('[data-proposal-id]').evaluateAll((els) => els.map((el) => el.dataset.proposalId)),
      ['p-allergy', 'p-metric'],
      'newest first',
    );
    assert.equal(
      await shown(proposal(page, 'p-allergy')),
      'Now: Allergic to peanuts Change to: Allergic to peanuts and cashews ' +
        'Why: You said cashews give you the same reaction as peanuts. ' +
        'Suggested 2 hours ago in “Dinner with chickpeas” Open Accept Reject',
    );
    assert.equal(
      await shown(proposal(page, 'p-metric')),
      'Now: Prefers metric units (kilograms, Celsius, kilometres) Remove this memory and remember: ' +
        'Uses miles for running distances; metric for everything else ' +
        'Why: You now log your runs in miles, so "metric units" no longer fits everything. ' +
        'Suggested yesterday in “Three days in Lisbon” Open Accept Reject',
    );
    assert.deepEqual(await ipcCalls(page, 'list_memory_proposals'), [{}]);
    // "Open" goes to the conversation the suggestion came from.
    await proposal(page, 'p-allergy').getByRole('button', { name: /^Open/ }).click();
    await until(page, () => location.hash === '#/chat');
    await page.locator('[role="log"] [data-message-id="1"]').waitFor();
    assertNoProblems(problems);
  });

  test('Accept on the update changes the memory’s text; the proposal goes', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    assert.equal(await rowText(page, 'm-allergy'), 'Allergic to peanuts');
    await proposal(page, 'p-allergy').getByRole('button', { name: 'Accept the suggestion for “Allergic to peanuts”' }).click();
    await proposal(page, 'p-allergy').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'accept_memory_proposal'), [{ id: 'p-allergy' }]);
    await until(page, () => document.querySelector('[data-memory-id="m-allergy"] button.open .text')?.textContent === 'Allergic to peanuts and cashews');
    assert.equal(
      flat(await banner(page).getByRole('heading', { level: 2 }).innerText()),
      'Hearth suggests a change to a protected memory',
    );
    await page.getByText('Changed “Allergic to peanuts”.').waitFor();
    // Focus moves on to the suggestion that is left.
    await until(page, () => document.activeElement?.closest('[data-proposal-id]')?.getAttribute('data-proposal-id') === 'p-metric');
    const memories = await page.evaluate(() => window.__hearthMock.memories());
    assert.equal(memories.find((m) => m.id === 'm-allergy').text, 'Allergic to peanuts and cashews');
    assert.equal(memories.find((m) => m.id === 'm-allergy').critical, true, 'still critical');
    assertNoProblems(problems);
  });

  test('Accept on the removal moves the memory to Recently removed and remembers its replacement', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await proposal(page, 'p-metric').getByRole('button', { name: /^Accept/ }).click();
    await proposal(page, 'p-metric').waitFor({ state: 'detached' });
    await row(page, 'm-metric').waitFor({ state: 'detached' });
    await page.locator('[data-memory-list]').getByText('Uses miles for running distances; metric for everything else').waitFor();
    const tab = page.getByRole('tab', { name: /Recently removed/ });
    assert.equal(flat(await tab.innerText()), 'Recently removed 2');
    await tab.click();
    await row(page, 'm-metric').waitFor();
    const removed = (await page.evaluate(() => window.__hearthMock.memories())).find((m) => m.id === 'm-metric');
    assert.equal(removed.status, 'removed');
    assert.equal(removed.removal_awaits_consent, true);
    assertNoProblems(problems);
  });

  test('Reject keeps the memory’s text and drops the proposal; when none is left, the banner goes', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await proposal(page, 'p-allergy').getByRole('button', { name: /^Reject/ }).click();
    await proposal(page, 'p-allergy').waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'reject_memory_proposal'), [{ id: 'p-allergy' }]);
    assert.deepEqual(await ipcCalls(page, 'accept_memory_proposal'), []);
    assert.equal(await rowText(page, 'm-allergy'), 'Allergic to peanuts');
    await page.getByText('Kept “Allergic to peanuts” as it is.').waitFor();
    await proposal(page, 'p-metric').getByRole('button', { name: /^Reject/ }).click();
    await banner(page).waitFor({ state: 'detached' });
    await until(page, () => document.activeElement?.id === 'screen-title');
    assert.equal(await rowText(page, 'm-metric'), 'Prefers metric units (kilograms, Celsius, kilometres)');
    assert.deepEqual(await page.evaluate(() => window.__hearthMock.proposals()), []);
    assertNoProblems(problems);
  });

  test('the detail panel of a memory with a pending proposal shows it, with Accept and Reject', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    await row(page, 'm-home').locator('button.open').click();
    await detail(page).locator('.timeline').waitFor();
    assert.equal(await detail(page).locator('[data-testid="detail-proposal"]').count(), 0, 'no proposal for this one');

    await row(page, 'm-allergy').locator('button.open').click();
    const box = detail(page).locator('[data-testid="detail-proposal"]');
    await box.waitFor();
    assert.equal(
      await shown(box),
      'Hearth suggests a change Change to: Allergic to peanuts and cashews ' +
        'Why: You said cashews give you the same reaction as peanuts. ' +
        'Suggested 2 hours ago in “Dinner with chickpeas” Open Accept Reject',
    );
    await box.getByRole('button', { name: /^Accept/ }).click();
    await box.waitFor({ state: 'detached' });
    assert.equal(await detail(page).locator('[data-testid="detail-text"]').innerText(), 'Allergic to peanuts and cashews');
    await until(page, () => document.activeElement?.id === 'memory-detail-title');
    assert.equal(await proposal(page, 'p-allergy').count(), 0, 'gone from the banner too');
    assert.deepEqual(await ipcCalls(page, 'accept_memory_proposal'), [{ id: 'p-allergy' }]);
    assertNoProblems(problems);
  });

  test('store_changed and memory_updated read the proposals again', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const before = (await ipcCalls(page, 'list_memory_proposals')).length;
    await page.evaluate(() => window.__hearthMock.emit('store_changed', null));
    await until(page, (n) => window.__ipcCalls.filter((c) => c.cmd === 'list_memory_proposals').length > n, before);
    const mid = (await ipcCalls(page, 'list_memory_proposals')).length;
    await page.evaluate(() =>
      window.__hearthMock.emit('memory_updated', { conversation_id: 'c-recipes', message_id: 2, changes: [] }),
    );
    await until(page, (n) => window.__ipcCalls.filter((c) => c.cmd === 'list_memory_proposals').length > n, mid);
    assertNoProblems(problems);
  });

  test('no "30 days" anywhere on the Memory screen (list, removed, details)', async (t) => {
    const { page, problems } = await session(t);
    await openMemory(page);
    const body = () => page.locator('body').innerText();
    assert.doesNotMatch(await body(), /30 days|deleted for good in/);
    await page.getByRole('tab', { name: /Recently removed/ }).click();
    await row(page, 'm-nurse').waitFor();
    assert.match(flat(await body()), /Memories Hearth removed stay here until you restore them or empty this list\./);
    await row(page, 'm-nurse').locator('button.open').click();
    await detail(page).locator('.timeline').waitFor();
    assert.match(flat(await detail(page).locator('[data-field="removed"]').innerText()), /by Hearth; it stays here until you restore it or empty Recently removed$/);
    assert.doesNotMatch(await body(), /30 days|deleted for good in/);
    assertNoProblems(problems);
  });
});

describe('Chat: a proposal in "Memory updated"', () => {
  /** Emit a memory_updated with one proposal (the seeded p-allergy) and one add, under the recipes answer. */
  async function chipWithProposal(page) {
    await page.goto(`${server.origin}/index.html#/chat`);
    await page.locator('[role="log"]').waitFor();
    await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Dinner with chickpeas' }).click();
    await page.locator('[role="log"] [data-message-id="2"]').waitFor();
    await page.evaluate(() =>
      window.__hearthMock.emit('memory_updated', {
        conversation_id: 'c-recipes',
        message_id: 2,
        changes: [
          { memory_id: 'm-veg', op: 'add', text: 'Eats vegetarian: no meat or fish', old_text: null, proposal_id: null },
          { memory_id: 'm-allergy', op: 'proposal', text: 'Allergic to peanuts and cashews', old_text: null, proposal_id: 'p-allergy' },
        ],
      }),
    );
    const chip = page.getByRole('button', { name: /^Memory updated/ });
    await chip.waitFor();
    return chip;
  }

  test('the chip says "Hearth suggests" with Accept / Reject; Accept calls accept_memory_proposal with its id', async (t) => {
    const { page, problems } = await session(t);
    const chip = await chipWithProposal(page);
    assert.equal(flat(await chip.innerText()), 'Memory updated · 1 change, 1 suggestion');
    await chip.click();
    const changes = page.locator('[data-testid="memory-chip"] li');
    assert.equal(await shown(changes.nth(0)), 'Remembered: Eats vegetarian: no meat or fish Undo');
    assert.equal(await shown(changes.nth(1)), 'Hearth suggests: Allergic to peanuts and cashews Accept Reject');
    assert.equal(await changes.nth(1).getByRole('button', { name: /^Undo/ }).count(), 0);
    await changes.nth(1).getByRole('button', { name: 'Accept “Hearth suggests: Allergic to peanuts and cashews”' }).click();
    await changes.nth(1).getByText('Accepted').waitFor();
    assert.deepEqual(await ipcCalls(page, 'accept_memory_proposal'), [{ id: 'p-allergy' }]);
    assert.deepEqual(await ipcCalls(page, 'undo_memory_change'), []);
    await until(page, () => document.activeElement?.classList.contains('undone-note'));
    assert.equal(flat(await chip.innerText()), 'Memory updated · 2 changes');
    const memories = await page.evaluate(() => window.__hearthMock.memories());
    assert.equal(memories.find((m) => m.id === 'm-allergy').text, 'Allergic to peanuts and cashews');
    assertNoProblems(problems);
  });

  test('Reject in the chip calls reject_memory_proposal and says "Rejected"; a refused one shows why', async (t) => {
    const { page, problems } = await session(t);
    const chip = await chipWithProposal(page);
    await chip.click();
    const change = page.locator('[data-testid="memory-chip"] li').nth(1);
    await change.getByRole('button', { name: /^Reject/ }).click();
    await change.getByText('Rejected').waitFor();
    assert.deepEqual(await ipcCalls(page, 'reject_memory_proposal'), [{ id: 'p-allergy' }]);
    assert.equal(flat(await chip.innerText()), 'Memory updated · 1 change');
    const memories = await page.evaluate(() => window.__hearthMock.memories());
    assert.equal(memories.find((m) => m.id === 'm-allergy').text, 'Allergic to peanuts');

    // A second chip for the same (now gone) proposal: the core refuses, the chip says so.
    await page.evaluate(() =>
      window.__hearthMock.emit('memory_updated', {
        conversation_id: 'c-recipes',
        message_id: 2,
        changes: [{ memory_id: 'm-allergy', op: 'proposal', text: 'Allergic to peanuts and cashews', old_text: null, proposal_id: 'p-allergy' }],
      }),
    );
    const again = page.locator('[data-testid="memory-chip"] li').nth(2);
    await again.getByRole('button', { name: /^Accept/ }).click();
    const alert = again.getByRole('alert');
    await alert.waitFor();
    assert.equal(flat(await alert.innerText()), "Couldn't accept it: there is no memory proposal p-allergy");
    assertNoProblems(problems);
  });
});

describe('Proposals: accessibility and screenshot', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations: proposals banner, detail with a proposal, chip with a proposal (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openMemory(page);
      await assertAxeClean(page, `memory proposals (${colorScheme})`);
      await page.mouse.move(5, 5);
      const file = await screenshot(page, `memory-proposals-${colorScheme}`);
      if (colorScheme === 'light') {
        const docs = path.resolve(UI_ROOT, '..', 'docs', 'screenshots');
        await fsp.mkdir(docs, { recursive: true });
        await page.screenshot({ path: path.join(docs, 'memory-proposals.png') });
      }
      assert.ok(file);

      await row(page, 'm-metric').locator('button.open').click();
      await detail(page).locator('[data-testid="detail-proposal"]').waitFor();
      await assertAxeClean(page, `memory detail with a proposal (${colorScheme})`);
      await screenshot(page, `memory-proposal-detail-${colorScheme}`);

      const chip = await chipWithProposalFor(page);
      await chip.click();
      await page.locator('[data-testid="memory-chip"] li').nth(0).getByRole('button', { name: /^Accept/ }).waitFor();
      await assertAxeClean(page, `chat chip with a proposal (${colorScheme})`);
      assertNoProblems(problems);
    });
  }
});

/** The chip with only a proposal (for the axe run). */
async function chipWithProposalFor(page) {
  await page.goto(`${server.origin}/index.html#/chat`);
  await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Dinner with chickpeas' }).click();
  await page.locator('[role="log"] [data-message-id="2"]').waitFor();
  await page.evaluate(() =>
    window.__hearthMock.emit('memory_updated', {
      conversation_id: 'c-recipes',
      message_id: 2,
      changes: [{ memory_id: 'm-metric', op: 'proposal', text: 'Prefers metric units (kilograms, Celsius, kilometres)', old_text: null, proposal_id: 'p-metric' }],
    }),
  );
  const chip = page.getByRole('button', { name: /^Memory updated/ });
  await chip.waitFor();
  return chip;
}
