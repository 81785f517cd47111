// Browser tests of the Tools screen's MCP servers against the mock core (production CSP): a
// server added through the dialog is listed with its tools needing approval; approving turns
// them on; a tool changed after approval opens a review with its diff and an alarm when its
// annotations ask for less care; a server that failed shows its stderr; removing asks first;
// an import reports what it skipped.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertNoProblems, mockServer, openBrowser, screenshot } from './harness.mjs';

const server = mockServer();
const url = (scenario = 'ok') => `${server.origin}/index.html?scenario=${scenario}#/tools`;

async function session(t, viewport = { width: 1080, height: 900 }) {
  const browser = await openBrowser({ viewport });
  t.after(() => browser.close());
  return browser;
}

const serverCard = (page, name) => page.locator('[data-testid="mcp-server"]', { has: page.getByRole('heading', { name, exact: true }) });
const states = async (card) => (await card.getByTestId('mcp-tool-state').allTextContents()).map((s) => s.trim());

describe('MCP servers on the Tools screen', () => {
  test('a server added by command lists its tools as needing approval; approving turns them on', async (t) => {
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
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await dialog.waitFor({ state: 'detached' });

    const card = serverCard(page, 'files');
    await card.getByTestId('mcp-tool').first().waitFor();
    assert.deepEqual(await states(card), ['Needs your approval', 'Needs your approval', 'Needs your approval']);
    assert.match(await card.textContent(), /Secrets in your keyring: API_TOKEN/);
    assert.doesNotMatch(await page.content(), /tok-secret-1/, 'a secret value is never shown');
    const add = await page.evaluate(() => window.__ipcCalls.find((c) => c.cmd === 'add_mcp_server').args);
    assert.deepEqual(add.args, ['/opt/mcp/filesystem/index.js', '/home/you/My Documents']);
    assert.deepEqual(add.env, [{ name: 'API_TOKEN', value: 'tok-secret-1' }]);
    const risks = (await card.getByTestId('mcp-risk').allTextContents()).map((s) => s.trim());
    assert.deepEqual(risks, ['read', 'write', 'destructive']);

    await card.getByRole('button', { name: 'Approve all tools' }).click();
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="mcp-server"]')].some(
        (c) => c.textContent.includes('files') && [...c.querySelectorAll('[data-testid="mcp-tool-state"]')].every((s) => s.textContent.trim() === 'On'),
      ),
    );
    // The user lowers an unannotated tool's tier.
    await card.getByLabel('Risk of files__write_file').selectOption('write');
    await page.waitForFunction(() => document.body.textContent.includes('set by you'));
    await screenshot(page, 'mcp-servers');
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
    assert.equal(await first.locator('.line.del').filter({ hasText: '"destructiveHint": true' }).count(), 1);
    assert.equal(await first.locator('.line.add').filter({ hasText: 'backup address' }).count(), 1);
    await screenshot(page, 'mcp-review');
    await first.getByRole('button', { name: 'Approve append_note' }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="mcp-review-tool"]').length === 1);
    const approved = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'approve_mcp_tools').map((c) => c.args));
    assert.deepEqual(approved, [{ name: 'notes', tool: 'append_note' }]);
    await dialog.getByRole('button', { name: 'Keep disabled' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.waitForFunction(() => document.body.textContent.includes('Off: new since approved'));
    assert.deepEqual(await states(card), ['On', 'On', 'Off: new since approved']);
    assertNoProblems(problems);
  });

  test("a server that failed shows its stderr; a start that fails says why; removing asks first", async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    const card = serverCard(page, 'broken');
    await card.getByTestId('mcp-stderr').waitFor();
    assert.match(await card.getByTestId('mcp-stderr').textContent(), /Cannot find module \.\/config\.json/);
    await card.getByRole('button', { name: 'Start and list tools' }).click();
    await page.waitForFunction(() => document.body.textContent.includes('did not start'));
    await card.getByRole('button', { name: 'Show log' }).click();
    assert.match(await card.getByTestId('mcp-log').textContent(), /Module\._resolveFilename/);

    await card.getByRole('button', { name: 'Remove' }).click();
    const confirm = page.getByRole('dialog', { name: 'Remove broken?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    assert.equal(await serverCard(page, 'broken').count(), 1);
    await card.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog', { name: 'Remove broken?' }).getByRole('button', { name: 'Remove broken' }).click();
    await page.waitForFunction(() => ![...document.querySelectorAll('[data-testid="mcp-server"] h3')].some((h) => h.textContent === 'broken'));

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
    assertNoProblems(problems);
  });
});
