// Browser tests of the Tools screen's MCP servers against the mock core (production CSP): a
// server added through the dialog is listed with its tools needing approval; approving one
// tool, then all, turns them on; a server shows "starting…" while its tools are listed; a tool
// changed after approval opens a review with its diff and an alarm when its annotations ask
// for less care, approving it turns it on and "Keep disabled" leaves it off; a server that
// failed shows its stderr; "Show log" reads the server's log; removing asks first; an import
// reports what it skipped; a server added in another process shows up; no axe violation in
// either theme.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, ipcCalls, mockServer, openBrowser, screenshot } from './harness.mjs';

const server = mockServer();
const url = (scenario = 'ok') => `${server.origin}/index.html?scenario=${scenario}#/tools`;

async function session(t, options = {}) {
  const browser = await openBrowser({ viewport: { width: 1080, height: 900 }, ...options });
  t.after(() => browser.close());
  return browser;
}

const serverCard = (page, name) => page.locator('[data-testid="mcp-server"]', { has: page.getByRole('heading', { name, exact: true }) });
const states = async (card) => (await card.getByTestId('mcp-tool-state').allTextContents()).map((s) => s.trim());
/** Wait until the tool states of the server `name` read `want`. */
const statesAre = (page, name, want) =>
  page.waitForFunction(
    ([n, w]) =>
      [...document.querySelectorAll('[data-testid="mcp-server"]')].some(
        (c) =>
          c.querySelector('h3')?.textContent === n &&
          JSON.stringify([...c.querySelectorAll('[data-testid="mcp-tool-state"]')].map((s) => s.textContent.trim())) === JSON.stringify(w),
      ),
    [name, want],
  );

describe('MCP servers on the Tools screen', () => {
  test('a server added by command lists its tools as needing approval; approving one, then all, turns them on', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await page.getByRole('heading', { name: 'MCP servers' }).waitFor();
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an MCP server' });
    await dialog.getByLabel('Name').fill('files');
    await dialog.getByLabel('Command', { exact: true }).fill('node');
    await dialog.getByLabel('Arguments').fill('/opt/mcp/filesystem/index.js "/home/you/My Documents"');
    await dialog.getByRole('button', { name: 'Add a variable' }).click();
    await dialog.getByLabel('Name 1').fill('API_TOKEN');
    await dialog.getByLabel('Value 1').fill('tok-secret-1');
    assert.equal(await dialog.getByLabel('Value 1').getAttribute('type'), 'password');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await dialog.waitFor({ state: 'detached' });

    const card = serverCard(page, 'files');
    await card.getByTestId('mcp-tool').first().waitFor();
    assert.deepEqual(await states(card), ['Needs your approval', 'Needs your approval', 'Needs your approval']);
    assert.match(await card.textContent(), /Secrets in your keyring: API_TOKEN/);
    assert.match(await card.getByTestId('mcp-status').textContent(), /Ready/);
    assert.doesNotMatch(await page.content(), /tok-secret-1/, 'a secret value is never shown');
    const [add] = await ipcCalls(page, 'add_mcp_server');
    assert.deepEqual(add.args, ['/opt/mcp/filesystem/index.js', '/home/you/My Documents']);
    assert.deepEqual(add.env, [{ name: 'API_TOKEN', value: 'tok-secret-1' }]);
    assert.equal(add.url, null);
    // The server's annotations are claims: every tool is destructive until the user decides.
    const risks = (await card.getByTestId('mcp-risk').allTextContents()).map((s) => s.trim());
    assert.deepEqual(risks, ['destructive', 'destructive', 'destructive']);
    const claims = (await card.getByTestId('mcp-claim').allTextContents()).map((s) => s.trim());
    assert.deepEqual(claims, ['Claims read-only', 'Claims a reversible write', 'Claims destructive']);
    assert.match(await card.textContent(), /labels not confirmed: asks every time/);

    await card.getByRole('button', { name: 'Approve all tools' }).click();
    await statesAre(page, 'files', ['On', 'On', 'On']);
    assert.deepEqual(await ipcCalls(page, 'approve_mcp_tools'), [{ name: 'files', tool: null }]);
    assert.equal(await card.getByRole('button', { name: /^Approve / }).count(), 0);
    // The user sets a tool's tier.
    await card.getByLabel('Risk of files__write_file').selectOption('write');
    await page.waitForFunction(() => document.body.textContent.includes('set by you'));
    assert.deepEqual(await ipcCalls(page, 'set_tool_risk'), [{ tool: 'files__write_file', risk: 'write' }]);
    await screenshot(page, 'mcp-servers');
    assertNoProblems(problems);
  });

  test('approving one tool of a new server approves the server: its other tools stay off, each to review', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await serverCard(page, 'notes').waitFor();
    await page.evaluate(() => window.__hearthMock.addMcpServerElsewhere('calendar'));
    const card = serverCard(page, 'calendar');
    await card.getByTestId('mcp-tool').first().waitFor();
    await card.getByRole('button', { name: 'Approve calendar__read_text_file' }).click();
    await statesAre(page, 'calendar', ['On', 'Off: new since approved', 'Off: new since approved']);
    assert.deepEqual(await ipcCalls(page, 'approve_mcp_tools'), [{ name: 'calendar', tool: 'read_text_file' }]);
    assert.equal(await card.getByRole('button', { name: 'Approve all tools' }).count(), 0);
    await card.getByRole('button', { name: 'Review calendar__write_file' }).click();
    const dialog = page.getByRole('dialog', { name: 'Review changes to calendar' });
    await dialog.getByText('New since you approved the server').waitFor();
    await dialog.getByRole('button', { name: 'Approve write_file' }).click();
    await dialog.waitFor({ state: 'detached' });
    await statesAre(page, 'calendar', ['On', 'Off: new since approved', 'On']);
    assertNoProblems(problems);
  });

  test('a server says "starting…" while its tools are listed, then ready', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    const card = serverCard(page, 'notes');
    await card.getByTestId('mcp-tool').first().waitFor();
    await page.evaluate(() => window.__hearthMock.setMcpStartDelay(600));
    await card.getByRole('button', { name: 'Refresh tools' }).click();
    await card.getByTestId('mcp-status').getByText('Starting…').waitFor();
    assert.equal(await card.getByRole('button', { name: 'Refresh tools' }).isDisabled(), true);
    await card.getByTestId('mcp-status').getByText('Ready').waitFor();
    assert.deepEqual(await ipcCalls(page, 'list_mcp_tools'), [{ name: 'notes' }]);
    assertNoProblems(problems);
  });

  test('a tool changed after approval is reviewed with its diff and an alarm; approving it turns it on', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    const card = serverCard(page, 'notes');
    await card.getByTestId('mcp-tool').first().waitFor();
    assert.deepEqual(await states(card), ['On', 'Off: changed since approved', 'Off: new since approved']);
    await card.getByRole('button', { name: 'Review changes' }).click();
    const dialog = page.getByRole('dialog', { name: 'Review changes to notes' });
    await dialog.getByTestId('mcp-review-tool').first().waitFor();
    assert.equal(await dialog.getByTestId('mcp-review-tool').count(), 2);
    const first = dialog.getByTestId('mcp-review-tool').first();
    await first.getByTestId('risk-lowered').waitFor();
    assert.match(await first.getByRole('alert').textContent(), /It now asks for less care/);
    assert.equal(await first.locator('.line.del').filter({ hasText: '"destructiveHint": true' }).count(), 1);
    assert.equal(await first.locator('.line.add').filter({ hasText: '"destructiveHint": false' }).count(), 1);
    assert.equal(await first.locator('.line.add').filter({ hasText: 'backup address' }).count(), 1);
    // The new tool's definition is all added lines, and it claims nothing safer.
    const second = dialog.getByTestId('mcp-review-tool').nth(1);
    assert.equal(await second.getByTestId('risk-lowered').count(), 0);
    assert.equal(await second.locator('.line.add').filter({ hasText: '"name": "tag_note"' }).count(), 1);
    // Focus starts on the heading, not on a button that approves.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'mcp-review-title');
    await screenshot(page, 'mcp-review', { fullPage: false });
    await first.getByRole('button', { name: 'Approve append_note' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="mcp-review-tool"]').length === 1);
    assert.deepEqual(await ipcCalls(page, 'approve_mcp_tools'), [{ name: 'notes', tool: 'append_note' }]);
    // "Keep disabled" on the last one: nothing approved, the dialog closes.
    await dialog.getByRole('button', { name: 'Keep disabled' }).click();
    await dialog.waitFor({ state: 'detached' });
    await statesAre(page, 'notes', ['On', 'On', 'Off: new since approved']);
    assert.equal((await ipcCalls(page, 'approve_mcp_tools')).length, 1);
    assertNoProblems(problems);
  });

  test("a tool's own Review button shows that tool alone; Escape keeps it off and gives focus back", async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    const card = serverCard(page, 'notes');
    await card.getByTestId('mcp-tool').first().waitFor();
    const review = card.getByRole('button', { name: 'Review notes__append_note' });
    await review.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Review changes to notes' });
    await dialog.getByTestId('risk-lowered').waitFor();
    assert.equal(await dialog.getByTestId('mcp-review-tool').count(), 1);
    // Tab never reaches the page behind the modal dialog (past its last control, focus goes
    // to the browser's own UI — the document body here — and then back into the dialog).
    const seen = new Set();
    for (let i = 0; i < 8; i += 1) {
      await page.keyboard.press('Tab');
      const where = await page.evaluate(() => {
        const el = document.activeElement;
        if (!el || el === document.body) return 'outside the page';
        return el.closest('dialog') ? el.textContent.trim() || el.getAttribute('aria-label') || el.tagName : `behind: ${el.outerHTML.slice(0, 80)}`;
      });
      assert.doesNotMatch(where, /^behind/, `tab ${i + 1}`);
      seen.add(where);
    }
    assert.ok(seen.has('Approve append_note') && seen.has('Keep disabled'), [...seen].join(' | '));
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Review notes__append_note');
    assert.deepEqual(await ipcCalls(page, 'approve_mcp_tools'), []);
    assert.deepEqual(await states(card), ['On', 'Off: changed since approved', 'Off: new since approved']);

    // Approving from its own dialog turns that tool on, and only it.
    await card.getByRole('button', { name: 'Review notes__tag_note' }).click();
    await dialog.getByRole('button', { name: 'Approve tag_note' }).click();
    await dialog.waitFor({ state: 'detached' });
    await statesAre(page, 'notes', ['On', 'Off: changed since approved', 'On']);
    assertNoProblems(problems);
  });

  test('a server that failed shows its stderr; a start that fails says why; "Show log" reads its log; removing asks first', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    const card = serverCard(page, 'broken');
    await card.getByTestId('mcp-stderr').waitFor();
    assert.match(await card.getByTestId('mcp-status').textContent(), /Error/);
    assert.match(await card.getByTestId('mcp-stderr').textContent(), /Cannot find module \.\/config\.json/);
    await card.getByRole('button', { name: 'Start and list tools' }).click();
    await page.waitForFunction(() => document.body.textContent.includes('did not start'));
    const showLog = card.getByRole('button', { name: 'Show log' });
    assert.equal(await showLog.getAttribute('aria-expanded'), 'false');
    await showLog.click();
    assert.match(await card.getByTestId('mcp-log').textContent(), /Module\._resolveFilename/);
    assert.deepEqual(await ipcCalls(page, 'mcp_server_log'), [{ name: 'broken' }]);
    assert.equal(await card.getByRole('button', { name: 'Hide log' }).getAttribute('aria-expanded'), 'true');

    await card.getByRole('button', { name: 'Remove' }).click();
    const confirm = page.getByRole('dialog', { name: 'Remove broken?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    assert.equal(await serverCard(page, 'broken').count(), 1);
    assert.deepEqual(await ipcCalls(page, 'remove_mcp_server'), []);
    await card.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog', { name: 'Remove broken?' }).getByRole('button', { name: 'Remove broken' }).click();
    await page.waitForFunction(() => ![...document.querySelectorAll('[data-testid="mcp-server"] h3')].some((h) => h.textContent === 'broken'));
    assert.deepEqual(await ipcCalls(page, 'remove_mcp_server'), [{ name: 'broken' }]);

    // A command that does not start: the dialog stays with the server's stderr.
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an MCP server' });
    await dialog.getByLabel('Name').fill('ghost');
    await dialog.getByLabel('Command', { exact: true }).fill('missing-server');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await dialog.getByText("The server didn't start").waitFor();
    assert.match(await dialog.textContent(), /missing-server: not found/);
    assertNoProblems(problems);
  });

  test('a server by URL sends its headers, not env; turning a server off says so', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await page.getByRole('heading', { name: 'MCP servers' }).waitFor();
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an MCP server' });
    await dialog.getByLabel('Name').fill('remote');
    await dialog.getByLabel('A URL (Streamable HTTP)').check();
    await dialog.getByLabel('URL', { exact: true }).fill('https://mcp.example.test/mcp');
    await dialog.getByRole('button', { name: 'Add a header' }).click();
    await dialog.getByLabel('Name 1').fill('Authorization');
    await dialog.getByLabel('Value 1').fill('Bearer hdr-secret-2');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await dialog.waitFor({ state: 'detached' });
    const [add] = await ipcCalls(page, 'add_mcp_server');
    assert.deepEqual(
      { command: add.command, url: add.url, env: add.env, headers: add.headers },
      { command: null, url: 'https://mcp.example.test/mcp', env: [], headers: [{ name: 'Authorization', value: 'Bearer hdr-secret-2' }] },
    );
    const card = serverCard(page, 'remote');
    await card.getByTestId('mcp-tool').first().waitFor();
    assert.match(await card.textContent(), /URL\s*https:\/\/mcp\.example\.test\/mcp/);
    assert.doesNotMatch(await page.content(), /hdr-secret-2/);

    await card.getByRole('checkbox', { name: 'remote on' }).uncheck();
    await card.getByTestId('mcp-status').getByText('Off').waitFor();
    assert.deepEqual(await ipcCalls(page, 'set_mcp_enabled'), [{ name: 'remote', enabled: false }]);
    assert.equal(await card.getByRole('button', { name: 'Refresh tools' }).isDisabled(), true);
    assertNoProblems(problems);
  });

  test("importing Claude Desktop's config adds its servers and says what it skipped and ignored", async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await page.getByRole('heading', { name: 'MCP servers' }).waitFor();
    await page.getByRole('button', { name: 'Import from Claude Desktop' }).click();
    const report = page.getByTestId('mcp-import-report');
    await report.waitFor();
    const text = await report.textContent();
    assert.match(text, /Imported github, docs/);
    assert.match(text, /Skipped legacy: it uses the legacy HTTP\+SSE transport/);
    assert.match(text, /ignored "autoApprove"/);
    await serverCard(page, 'github').waitFor();
    assert.match(await serverCard(page, 'github').getByTestId('mcp-status').textContent(), /Not started yet/);
    // Again: both exist now, so both are skipped.
    await page.getByRole('button', { name: 'Import from Claude Desktop' }).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="mcp-import-report"]')?.textContent.includes('Nothing new'));
    // A file path: the Import button is off until there is one.
    const importButton = page.getByRole('button', { name: 'Import', exact: true });
    assert.equal(await importButton.isDisabled(), true);
    await page.getByLabel('Import a config file').fill('/home/you/.cursor/mcp.json');
    await page.getByLabel('Import a config file').press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="mcp-import-report"]')?.textContent.includes('Nothing new'));
    assert.deepEqual((await ipcCalls(page, 'import_mcp_servers')).at(-1), { path: '/home/you/.cursor/mcp.json', claudeDesktop: false, replace: false });
    assertNoProblems(problems);
  });

  test('a server added in another process (hearth mcp add) shows up', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await serverCard(page, 'notes').waitFor();
    await page.evaluate(() => window.__hearthMock.addMcpServerElsewhere('calendar'));
    await serverCard(page, 'calendar').getByTestId('mcp-tool').first().waitFor();
    assert.deepEqual(await states(serverCard(page, 'calendar')), ['Needs your approval', 'Needs your approval', 'Needs your approval']);
    assertNoProblems(problems);
  });

  for (const colorScheme of ['light', 'dark']) {
    test(`no axe violation on the servers, the add dialog and the review dialog (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url());
      await serverCard(page, 'notes').getByTestId('mcp-tool').first().waitFor();
      if (colorScheme === 'dark') await screenshot(page, 'mcp-servers-dark');
      await serverCard(page, 'broken').getByRole('button', { name: 'Show log' }).click();
      await serverCard(page, 'broken').getByTestId('mcp-log').waitFor();
      await assertAxeClean(page, `the MCP servers (${colorScheme})`);

      await page.getByRole('button', { name: 'Add server' }).click();
      const add = page.getByRole('dialog', { name: 'Add an MCP server' });
      await add.getByRole('button', { name: 'Add a variable' }).click();
      await assertAxeClean(page, `the add-server dialog (${colorScheme})`);
      await add.getByRole('button', { name: 'Cancel' }).click();
      await add.waitFor({ state: 'detached' });

      await serverCard(page, 'notes').getByRole('button', { name: 'Review changes' }).click();
      const review = page.getByRole('dialog', { name: 'Review changes to notes' });
      await review.getByTestId('risk-lowered').waitFor();
      await assertAxeClean(page, `the review dialog (${colorScheme})`);
      if (colorScheme === 'dark') await screenshot(page, 'mcp-review-dark', { fullPage: false });
      assertNoProblems(problems);
    });
  }
});
