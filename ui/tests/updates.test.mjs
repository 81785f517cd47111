// Updates and Settings → About, against the mock core (dist-mock/) with the production CSP:
// the first-run question, the offer with its notes, Install → restart, a download whose
// signature does not verify, a build from source, and "Open at login".
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, flat, ipcCalls, mockServer, screenshot, session, until } from './harness.mjs';

const server = mockServer();

const url = (hash, params = {}) => {
  const query = new URLSearchParams(params).toString();
  return `${server.origin}/index.html${query ? `?${query}` : ''}#/${hash}`;
};

const card = (page) => page.locator('[data-update]');

describe('Updates', () => {
  test('the first run asks whether to check, yes by default; "No thanks" says no with one click and the question is gone', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', { updates: 'ask' }));
    const question = page.getByRole('region', { name: 'Check for updates?' });
    await question.waitFor();
    assert.match(flat(await question.textContent()), /It sends only its version and your platform, and never installs anything without your click\./);
    // Yes is the first, primary button.
    const buttons = question.getByRole('button');
    assert.equal(flat(await buttons.nth(0).textContent()), 'Check automatically');
    assert.match((await buttons.nth(0).getAttribute('class')) ?? '', /btn-primary/);
    await screenshot(page, 'updates-first-run-question');
    await page.getByRole('button', { name: 'No thanks' }).click();
    await question.waitFor({ state: 'detached' });
    assert.deepEqual(await ipcCalls(page, 'set_update_check'), [{ on: false }]);
    // Settings → About shows the switch off.
    await page.goto(url('settings', { updates: 'ask' }));
    await page.getByRole('heading', { name: 'About Hearth' }).waitFor();
    assertNoProblems(problems);
  });

  test('an offer shows the version and its notes as text; Install downloads, then Restart now', async (t) => {
    const { page, problems } = await session(t, { bypassCSP: true });
    await page.goto(url('chat', { updates: 'offer' }));
    const offer = page.getByRole('region', { name: 'Hearth 0.2.0 is available' });
    await offer.waitFor();
    assert.match(flat(await offer.textContent()), /You have 0\.1\.0\./);
    await screenshot(page, 'updates-offer-card');
    await page.getByRole('button', { name: "What's new…" }).click();
    const dialog = page.getByRole('dialog', { name: 'Hearth 0.2.0' });
    await dialog.waitFor();
    const notes = dialog.locator('.notes');
    assert.equal(await notes.textContent(), 'Faster answers from the built-in model.\n<b>Not bold</b>: notes are shown as text.');
    assert.equal(await dialog.locator('b').count(), 0, 'the server’s notes are never HTML');
    await assertAxeClean(page);
    await screenshot(page, 'updates-offer-details');
    // Nothing was installed before the click.
    assert.deepEqual(await ipcCalls(page, 'install_update'), []);
    await dialog.getByRole('button', { name: 'Install update' }).click();
    const installed = page.getByRole('region', { name: 'Hearth 0.2.0 is installed' });
    await installed.waitFor();
    await installed.getByRole('button', { name: 'Restart now' }).click();
    assert.equal((await ipcCalls(page, 'restart_app')).length, 1);
    assertNoProblems(problems);
  });

  test('a download whose signature does not verify is refused with a clear message', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat', { updates: 'bad-signature' }));
    await page.getByRole('button', { name: "What's new…" }).click();
    await page.getByRole('button', { name: 'Install update' }).click();
    const refused = page.getByRole('alert').filter({ hasText: "The update wasn't installed" });
    await refused.waitFor();
    assert.match(flat(await refused.textContent()), /not signed with Hearth's release key, so it was not installed\. Nothing on this computer was changed\./);
    await screenshot(page, 'updates-bad-signature');
    await refused.getByRole('button', { name: 'Dismiss' }).click();
    assert.equal(await card(page).count(), 0);
    assertNoProblems(problems);
  });

  test('Settings → About: version, commit, data folder, the update switch, Check now, and Open at login off by default', async (t) => {
    const { page, problems } = await session(t, { bypassCSP: true });
    await page.goto(url('settings'));
    await page.getByRole('heading', { name: 'About Hearth' }).waitFor();
    assert.equal(flat(await page.locator('[data-about="version"]').textContent()), '0.1.0');
    assert.equal(flat(await page.locator('[data-about="commit"]').textContent()), '4de093e1a2');
    assert.match(flat(await page.locator('[data-about="data_dir"]').textContent()), /\/\.local\/share\/hearth$/);
    const check = page.getByRole('switch', { name: 'Check for updates automatically' });
    assert.equal(await check.isChecked(), true);
    const login = page.getByRole('switch', { name: 'Open Hearth at login' });
    await until(page, () => !document.querySelector('[data-about="open-at-login"]')?.disabled);
    assert.equal(await login.isChecked(), false);
    await page.getByRole('button', { name: 'Check now' }).click();
    await page.getByText('Hearth 0.1.0 is the newest version.').waitFor();
    await check.uncheck();
    assert.deepEqual(await ipcCalls(page, 'set_update_check'), [{ on: false }]);
    await login.check();
    assert.deepEqual(await ipcCalls(page, 'set_open_at_login'), [{ on: true }]);
    await page.locator('[data-section="about"]').scrollIntoViewIfNeeded();
    await assertAxeClean(page);
    await screenshot(page, 'settings-about');
    assertNoProblems(problems);
  });

  test('a build from source never asks and says it does not update itself', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('settings', { updates: 'source' }));
    await page.getByRole('heading', { name: 'About Hearth' }).waitFor();
    await page.locator('[data-about="no-updates"]').waitFor();
    assert.equal(await card(page).count(), 0);
    assert.equal(await page.getByRole('switch', { name: 'Check for updates automatically' }).count(), 0);
    assertNoProblems(problems);
  });
});
