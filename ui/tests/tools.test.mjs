// Browser tests of the Tools and Activity screens against the mock core (production CSP):
// the tools with their risk tiers, grants revoked from the list, the audit log with its
// chain's status (a broken chain is an alert), and the filter by kind.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertNoProblems, mockServer, openBrowser, screenshot } from './harness.mjs';

const server = mockServer();
const url = (hash, scenario = "ok") => `${server.origin}/index.html?scenario=${scenario}#/${hash}`;

async function session(t) {
  const browser = await openBrowser({ viewport: { width: 1080, height: 720 } });
  t.after(() => browser.close());
  return browser;
}

describe('Tools screen', () => {
  test('lists every built-in tool with its risk, and revoking a grant makes it ask again', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('tools'));
    await page.getByRole('heading', { name: 'Tools & permissions' }).waitFor();
    const rows = page.getByTestId('tool');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 11);
    const risk = async (name) =>
      (await page.locator('[data-testid="tool"]', { hasText: name }).locator('.risk').textContent()).trim();
    assert.equal(await risk('delete_file'), 'destructive');
    assert.equal(await risk('create_file'), 'write');
    assert.equal(await risk('read_file'), 'read');
    assert.equal(await page.getByTestId('grant').count(), 2);
    await screenshot(page, 'tools-screen');
    await page.getByRole('button', { name: 'Revoke create_file (always)' }).click();
    await page.getByTestId('grant').first().waitFor();
    assert.equal(await page.getByTestId('grant').count(), 1);
    const calls = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'revoke_grant').map((c) => c.args));
    assert.deepEqual(calls, [{ id: 2 }]);
    await page.getByRole('button', { name: 'Revoke remember (conversation)' }).click();
    await page.getByTestId('no-grants').waitFor();
    assertNoProblems(problems);
  });
});

describe('Activity screen', () => {
  test('shows the log newest first with the chain intact; a broken chain is an alert; the filter narrows it', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('activity'));
    await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
    await page.getByTestId('chain').waitFor();
    assert.equal(await page.getByTestId('chain').textContent(), 'Intact: 6 entries, hash chain verified.');
    const entries = page.getByTestId('entry');
    assert.equal(await entries.count(), 6);
    assert.match(await entries.first().textContent(), /delete_file allowed by user/);
    assert.match(await page.locator('[data-testid="entry"]', { hasText: 'create_file denied' }).textContent(), /after untrusted text/);
    assert.match(await page.locator('[data-testid="entry"][data-kind="memory"]').textContent(), /content deleted/);
    await page.getByRole('combobox', { name: 'Show' }).selectOption('tool_call');
    assert.equal(await entries.count(), 3);
    await screenshot(page, 'activity-screen');
    await page.evaluate(() => window.__hearthMock.tamperAudit());
    await page.goto(url('tools'));
    await page.goto(url('activity'));
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').textContent(), /broken at entry 2/);
    assertNoProblems(problems);
  });
});

describe('Folders screen: what tools may do', () => {
  test('a folder is read-only for tools until the user ticks it; the choice reaches the core', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('folders'));
    const box = page.getByRole('checkbox', { name: /Tools may change files here/ });
    await box.waitFor();
    assert.equal(await box.isChecked(), false, 'read-only by default');
    await box.check();
    await page.waitForFunction(() => window.__ipcCalls.some((c) => c.cmd === 'set_folder_writable'));
    const calls = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'set_folder_writable').map((c) => c.args));
    assert.deepEqual(calls, [{ path: '/home/ada/Notes', writable: true }]);
    // Listed again from the core: still ticked.
    await page.goto(url('tools'));
    await page.goto(url('folders'));
    await box.waitFor();
    assert.equal(await box.isChecked(), true);
    await box.uncheck();
    await page.waitForFunction(() => window.__ipcCalls.filter((c) => c.cmd === 'set_folder_writable').length === 2);
    assertNoProblems(problems);
  });
});
