// Browser tests of the mock build (dist-mock/) in real Chromium, served with the production CSP.
// Run with `npm test` (builds dist-mock first).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  heading,
  ipcCalls,
  mockServer,
  screenshot,
  session,
  until,
} from './harness.mjs';

const require = createRequire(import.meta.url);
const AXE = require.resolve('axe-core/axe.min.js');

const SCREENS = [
  { id: 'chat', label: 'Chat', h1: 'Chat' },
  { id: 'memory', label: 'Memory', h1: 'Memory' },
  { id: 'folders', label: 'Folders', h1: 'Folders' },
  { id: 'tools', label: 'Tools', h1: 'Tools & permissions' },
  { id: 'activity', label: 'Activity', h1: 'Activity' },
  { id: 'usage', label: 'Usage', h1: 'Usage' },
  { id: 'settings', label: 'Settings', h1: 'Settings' },
];

const STATUS_FIELDS = [
  'version',
  'commit',
  'data_dir',
  'db_path',
  'db_id',
  'schema_version',
  'sqlite_version',
  'sqlcipher_version',
  'sqlite_vec_version',
  'key_backend',
  'encrypted',
  'fts5',
  'vec0',
];

const server = mockServer();

const url = (page = 'index.html', { scenario, hash } = {}) =>
  `${server.origin}/${page}${scenario ? `?scenario=${scenario}` : ''}${hash ? `#/${hash}` : ''}`;

/** Open a fresh browser for one test; always closed, and must end without console errors. */
function assertNoProblems(problems) {
  assert.deepEqual(problems, [], 'no console errors/warnings, page errors, CSP violations or failed requests');
}

async function current(page) {
  return page.evaluate(() => {
    const items = [...document.querySelectorAll('nav[aria-label="Main"] [aria-current="page"]')];
    return items.map((el) => el.textContent?.replace(/\s+/g, ' ').trim());
  });
}

async function focused(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el) return null;
    if (el.matches('nav button')) return `nav:${el.getAttribute('data-route')}`;
    if (el.matches('main h1')) return `h1:${el.textContent?.trim()}`;
    return `${el.tagName.toLowerCase()}:${el.textContent?.trim().slice(0, 40)}`;
  });
}

/** After a switch: URL hash, visible <h1>, aria-current, and focus on that <h1>. */
async function assertOnScreen(page, id) {
  const screen = SCREENS.find((s) => s.id === id);
  await until(page, (h) => document.querySelector('main h1')?.textContent?.trim() === h, screen.h1);
  assert.equal(await heading(page), screen.h1);
  assert.equal(new URL(page.url()).hash, `#/${id}`);
  const active = await current(page);
  assert.equal(active.length, 1, 'exactly one nav entry is current');
  assert.match(active[0], new RegExp(`^${screen.label}`));
  assert.ok(await page.locator('main h1').isVisible());
}

async function assertFocusOnHeading(page, id) {
  const screen = SCREENS.find((s) => s.id === id);
  await until(page, (h) => document.activeElement?.matches('main h1') && document.activeElement.textContent?.trim() === h, screen.h1);
}

describe('main window: navigation', () => {
  test('keyboard only: reach all seven screens with Tab, arrows, Enter/Space and Ctrl+digit', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await assertOnScreen(page, 'chat'); // default route, no focus stolen on load
    assert.equal(await page.title(), 'Chat · Hearth');

    // Tab: the skip link first, then the nav entry of the current screen.
    await page.keyboard.press('Tab');
    assert.match(await focused(page), /^a:Skip to content/);
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'nav:chat');

    // Arrow keys move between entries without activating them; Enter activates.
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(page), 'nav:memory');
    assert.match((await current(page))[0], /^Chat/, 'arrows only move focus');
    await page.keyboard.press('Enter');
    await assertOnScreen(page, 'memory');
    await assertFocusOnHeading(page, 'memory');

    // Back into the nav (it lands on the current entry), down, Space activates.
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focused(page), 'nav:memory');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(page), 'nav:folders');
    await page.keyboard.press('Space');
    await assertOnScreen(page, 'folders');
    await assertFocusOnHeading(page, 'folders');

    // Ctrl+digit from anywhere.
    await page.keyboard.press('Control+4');
    await assertOnScreen(page, 'tools');
    await assertFocusOnHeading(page, 'tools');
    await page.keyboard.press('Control+7');
    await assertOnScreen(page, 'settings');
    await assertFocusOnHeading(page, 'settings');

    // Arrows wrap around: Settings ↓ → Chat; Chat ↑ → Settings ↑ → Usage.
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focused(page), 'nav:settings');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(page), 'nav:chat');
    await page.keyboard.press('Enter');
    await assertOnScreen(page, 'chat');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    assert.equal(await focused(page), 'nav:usage');
    await page.keyboard.press('Enter');
    await assertOnScreen(page, 'usage');
    await assertFocusOnHeading(page, 'usage');
    assert.equal(await page.title(), 'Usage · Hearth');

    await page.keyboard.press('Control+1');
    await assertOnScreen(page, 'chat');
    await page.keyboard.press('Control+2');
    await assertOnScreen(page, 'memory');
    await page.keyboard.press('Control+3');
    await assertOnScreen(page, 'folders');
    await page.keyboard.press('Control+5');
    await assertOnScreen(page, 'activity');

    // Only the current entry is in the Tab order (roving tabindex).
    const tabbable = await page.$$eval('nav button', (els) => els.filter((el) => el.tabIndex === 0).map((el) => el.dataset.route));
    assert.deepEqual(tabbable, ['activity']);
    assertNoProblems(problems);
  });

  test('"Skip to content" moves focus to the screen heading without changing the route', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'tools' }));
    await assertOnScreen(page, 'tools');
    await page.keyboard.press('Tab');
    await page.locator('.skip-link').waitFor({ state: 'visible' });
    await page.keyboard.press('Enter');
    await assertFocusOnHeading(page, 'tools');
    assert.equal(new URL(page.url()).hash, '#/tools');
    assertNoProblems(problems);
  });

  test('Ctrl+W closes the main window to the tray (hide_main_window), as its close button does', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'chat' }));
    await assertOnScreen(page, 'chat');
    assert.deepEqual(await ipcCalls(page, 'hide_main_window'), []);
    await page.keyboard.press('Control+KeyW');
    await until(page, () => window.__ipcCalls.some((c) => c.cmd === 'hide_main_window'));
    assert.equal((await ipcCalls(page, 'hide_main_window')).length, 1);
    // Ctrl+digit still moves between screens.
    await page.keyboard.press('Control+Digit2');
    await assertOnScreen(page, 'memory');
    assertNoProblems(problems);
  });

  test('hash routing: a reload keeps the screen, an unknown route falls back to Chat', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'memory' }));
    await assertOnScreen(page, 'memory');
    await page.reload();
    await assertOnScreen(page, 'memory');
    await page.goto(url('index.html', { hash: 'nope' }));
    await assertOnScreen(page, 'chat');
    // History works across hash routes.
    await page.locator('nav[aria-label="Main"] button[data-route="settings"]').click();
    await assertOnScreen(page, 'settings');
    await page.goBack();
    await assertOnScreen(page, 'chat');
    assertNoProblems(problems);
  });
});

describe('main window: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations on any screen (${colorScheme} theme); screenshots`, async (t) => {
      // axe is injected as a script tag, which the CSP would (rightly) block: bypass it here only.
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      for (const screen of SCREENS) {
        await page.goto(url('index.html', { hash: screen.id }));
        await assertOnScreen(page, screen.id);
        if (screen.id === 'settings') {
          await page.locator('dd[data-field="vec0"]').waitFor();
          await page.locator('[data-testid="shortcut-current"]').waitFor();
        }
        await assertAxeClean(page, `${screen.id} (${colorScheme})`);
        await screenshot(page, `main-${screen.id}-${colorScheme}`);
      }
      assertNoProblems(problems);
    });

    test(`axe finds no violations on Settings in every scenario (${colorScheme} theme); screenshots`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      const ready = {
        'shortcut-taken': '[data-testid="shortcut-warning"]',
        'startup-error': '[data-testid="status-error-code"]',
        'key-file': '[data-testid="status-warnings"]',
      };
      for (const [scenario, selector] of Object.entries(ready)) {
        await page.goto(url('index.html', { scenario, hash: 'settings' }));
        await page.locator(selector).waitFor();
        await page.locator('[data-testid="shortcut-current"]').waitFor();
        await assertAxeClean(page, `settings/${scenario} (${colorScheme})`);
        await screenshot(page, `main-settings-${scenario}-${colorScheme}`);
      }
      // And with an inline validation error showing.
      await page.goto(url('index.html', { hash: 'settings' }));
      await page.getByLabel('New shortcut').fill('Banana');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.locator('#shortcut-error').waitFor();
      await assertAxeClean(page, `settings/invalid shortcut (${colorScheme})`);
      assertNoProblems(problems);
    });

    test(`axe finds no violations on quick.html (${colorScheme} theme); screenshot`, async (t) => {
      const { page, problems } = await session(t, {
        colorScheme,
        bypassCSP: true,
        viewport: { width: 640, height: 360 },
      });
      await page.goto(url('quick.html'));
      await page.getByRole('textbox', { name: 'Ask Hearth' }).waitFor();
      await page.getByText('Ask anything — the answer appears here.').waitFor();
      await assertAxeClean(page, `quick (${colorScheme})`);
      await screenshot(page, `quick-${colorScheme}`);
      assertNoProblems(problems);
    });
  }
});

async function assertAxeClean(page, where) {
  const hasAxe = await page.evaluate(() => 'axe' in window);
  if (!hasAxe) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    // @ts-expect-error injected by addScriptTag
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
    }));
  });
  assert.deepEqual(violations, [], `axe violations on ${where}:\n${JSON.stringify(violations, null, 2)}`);
}

describe('Settings → Status', () => {
  test('shows exactly the values the core returned, in order, and refreshes on store_changed', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'settings' }));
    await page.locator('dd[data-field="vec0"]').waitFor();

    const status = await page.evaluate(() => window.__hearthMock.status());
    const rendered = await page.$$eval('dl dd[data-field]', (dds) => dds.map((dd) => [dd.dataset.field, dd.textContent]));
    assert.deepEqual(
      rendered.map(([field]) => field),
      STATUS_FIELDS,
      'one dd per field, in contract order',
    );
    for (const [field, text] of rendered) {
      assert.equal(text, String(status[field]), `dd[data-field=${field}] is the raw value`);
    }
    // Spot-check the mock's concrete values so a broken mock can't make this vacuous.
    const byField = Object.fromEntries(rendered);
    assert.equal(byField.schema_version, '3');
    assert.equal(byField.encrypted, 'true');
    assert.equal(byField.db_path, '/home/alex/.local/share/hearth/hearth.db');
    assert.equal(await page.locator('dt').first().textContent(), 'Hearth version');
    assert.equal(byField.commit, '4de093e1a2');
    assert.equal(await page.locator('[data-testid="status-warnings"]').count(), 0, 'no warnings callout without warnings');

    // The core says the store changed: the panel asks again and shows the new values.
    await page.evaluate(async () => {
      window.__hearthMock.setStatus({
        schema_version: 4,
        vec0: false,
        warnings: ['The database key is stored in a plain file.'],
      });
      await window.__hearthMock.emit('store_changed', null);
    });
    await until(page, () => document.querySelector('dd[data-field="schema_version"]')?.textContent === '4');
    assert.equal(await page.locator('dd[data-field="vec0"]').textContent(), 'false');
    assert.match(await page.locator('[data-testid="status-warnings"]').innerText(), /stored in a plain file/);
    // The panel asked twice; Settings → About once, for the version and data folder.
    const calls = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'get_status').length);
    assert.equal(calls, 3);
    assertNoProblems(problems);
  });

  test('warnings from the core appear above the list (key stored in a file)', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { scenario: 'key-file', hash: 'settings' }));
    const callout = page.locator('[data-testid="status-warnings"]');
    await callout.waitFor();
    assert.match(await callout.innerText(), /stored in a plain file/);
    assert.equal(await page.locator('dd[data-field="key_backend"]').textContent(), 'file');
    const above = await page.evaluate(() => {
      const warn = document.querySelector('[data-testid="status-warnings"]');
      const list = document.querySelector('dl');
      return Boolean(warn && list && warn.compareDocumentPosition(list) & Node.DOCUMENT_POSITION_FOLLOWING);
    });
    assert.ok(above, 'the warning comes before the list');
    assertNoProblems(problems);
  });

  test('"Copy" puts the status JSON on the clipboard', async (t) => {
    const { page, context, problems } = await session(t);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    await page.goto(url('index.html', { hash: 'settings' }));
    await page.locator('dd[data-field="vec0"]').waitFor();
    await page.getByRole('button', { name: 'Copy status as JSON' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
    assert.deepEqual(copied, await page.evaluate(() => window.__hearthMock.status()));
    assertNoProblems(problems);
  });

  test('startup error: the message and code are shown and the rest of the app still works', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { scenario: 'startup-error', hash: 'settings' }));
    const alert = page.getByRole('alert').filter({ hasText: "Hearth couldn't open its data" });
    await alert.waitFor();
    assert.match(await alert.innerText(), /found your database but not its key in the system keyring/);
    assert.equal(await page.locator('[data-testid="status-error-code"]').textContent(), 'key_missing');
    assert.equal(await page.locator('dd[data-field]').count(), 0, 'no status values are invented');
    // The other sections still work.
    await page.locator('[data-testid="shortcut-current"]').waitFor();
    assert.ok(await page.getByRole('radio', { name: 'System', exact: true }).isChecked());
    // "Try again" asks the core again (and fails again, honestly).
    await page.getByRole('button', { name: 'Try again' }).click();
    // (Once for the panel, once for About, once more for "Try again".)
    await until(page, () => window.__ipcCalls.filter((c) => c.cmd === 'get_status').length === 3);
    await alert.waitFor();
    // Navigation still works.
    await page.keyboard.press('Control+1');
    await assertOnScreen(page, 'chat');
    await page.keyboard.press('Control+7');
    await assertOnScreen(page, 'settings');
    await page.locator('[data-testid="status-error-code"]').waitFor();
    assertNoProblems(problems);
  });
});

describe('Settings → Quick prompt shortcut', () => {
  test('a taken shortcut shows a warning; saving a new one updates it; an invalid one shows the error', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { scenario: 'shortcut-taken', hash: 'settings' }));
    const warning = page.locator('[data-testid="shortcut-warning"]');
    await warning.waitFor();
    const text = (await warning.innerText()).replace(/\s+/g, ' ');
    assert.match(
      text,
      /The shortcut CommandOrControl\+Shift\+Space is in use by another app, so Hearth couldn't register it\. Pick another one\./,
    );
    assert.match(text, /HotKey already registered by another application/, 'the error detail is shown');

    const input = page.getByLabel('New shortcut');
    const current = page.locator('[data-testid="shortcut-current"]');

    // Invalid: the core rejects with an ErrorDto; its message shows inline as an alert.
    await input.fill('Ctrl+Banana');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const error = page.locator('[role="alert"] #shortcut-error');
    await error.waitFor();
    assert.match(await error.innerText(), /"Ctrl\+Banana" isn't a shortcut Hearth understands/);
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    assert.equal(await current.getAttribute('data-accelerator'), 'CommandOrControl+Shift+Space', 'unchanged');
    await until(page, () => document.activeElement?.id === 'shortcut-input');

    // Valid: saved, the warning goes away and the display updates.
    await input.fill('CommandOrControl+Alt+H');
    assert.equal(await page.locator('#shortcut-error').count(), 0, 'typing clears the error');
    await input.press('Enter');
    await until(page, () => document.querySelector('[data-testid="shortcut-current"]')?.getAttribute('data-accelerator') === 'CommandOrControl+Alt+H');
    await warning.waitFor({ state: 'detached' });
    assert.match(await current.innerText(), /Ctrl\s*Alt\s*H/);
    assert.match(await current.innerText(), /Active/);
    await page.getByText('Saved. Ctrl+Alt+H now opens the quick prompt.').waitFor();
    const sets = await page.evaluate(() => window.__ipcCalls.filter((c) => c.cmd === 'set_shortcut').map((c) => c.args));
    assert.deepEqual(sets, [{ accelerator: 'Ctrl+Banana' }, { accelerator: 'CommandOrControl+Alt+H' }]);
    assertNoProblems(problems);
  });

  test('"Record" captures a key combination into the field', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'settings' }));
    await page.locator('[data-testid="shortcut-current"]').waitFor();
    const record = page.getByRole('button', { name: 'Record' });
    await record.click();
    assert.equal(await record.getAttribute('aria-pressed'), 'true');
    await until(page, () => document.activeElement?.id === 'shortcut-input');
    await page.keyboard.press('k'); // no modifier: asks for one
    await page.getByText('Add a modifier such as Ctrl or Alt to that key.').waitFor();
    await page.keyboard.press('Control+Shift+K');
    await until(page, () => document.querySelector('#shortcut-input')?.value === 'CommandOrControl+Shift+K');
    assert.equal(await page.getByRole('button', { name: 'Record' }).getAttribute('aria-pressed'), 'false');
    // Ctrl+digit while recording is captured, not treated as navigation.
    await page.getByRole('button', { name: 'Record' }).click();
    await page.keyboard.press('Control+2');
    await until(page, () => document.querySelector('#shortcut-input')?.value === 'CommandOrControl+2');
    await assertOnScreen(page, 'settings');
    assertNoProblems(problems);
  });

  test('the shortcut_changed event updates the display', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('index.html', { hash: 'settings' }));
    await page.locator('[data-testid="shortcut-current"]').waitFor();
    await page.evaluate(() =>
      window.__hearthMock.emit('shortcut_changed', { accelerator: 'Alt+Space', registered: false, error: null }),
    );
    const warning = page.locator('[data-testid="shortcut-warning"]');
    await warning.waitFor();
    assert.match(await warning.innerText(), /The shortcut Alt\+Space is in use by another app/);
    assert.equal(await page.locator('[data-testid="shortcut-current"]').getAttribute('data-accelerator'), 'Alt+Space');
    assertNoProblems(problems);
  });
});

describe('Settings → Appearance', () => {
  test('theme override: Dark/Light set data-theme, persist across reloads; System follows the OS', async (t) => {
    const { page, problems } = await session(t, { colorScheme: 'light' });
    await page.goto(url('index.html', { hash: 'settings' }));
    const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const theme = () => page.evaluate(() => document.documentElement.getAttribute('data-theme'));
    assert.ok(await page.getByRole('radio', { name: 'System', exact: true }).isChecked());
    assert.equal(await theme(), null);
    const lightBg = await bg();

    await page.getByRole('radio', { name: 'Dark', exact: true }).check();
    await until(page, () => document.documentElement.getAttribute('data-theme') === 'dark');
    assert.notEqual(await bg(), lightBg, 'the page actually turns dark');
    await page.reload();
    await until(page, () => document.documentElement.getAttribute('data-theme') === 'dark');
    assert.ok(await page.getByRole('radio', { name: 'Dark', exact: true }).isChecked());

    // The quick window shares the preference.
    const quick = await page.context().newPage();
    await quick.goto(url('quick.html'));
    await until(quick, () => document.documentElement.getAttribute('data-theme') === 'dark');
    await quick.close();

    // Light wins over a dark OS.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.getByRole('radio', { name: 'Light', exact: true }).check();
    await until(page, () => document.documentElement.getAttribute('data-theme') === 'light');
    assert.equal(await bg(), lightBg);

    // System removes the override and follows the (now dark) OS.
    await page.getByRole('radio', { name: 'System', exact: true }).check();
    assert.equal(await theme(), null);
    assert.notEqual(await bg(), lightBg);
    assert.equal(await page.evaluate(() => localStorage.getItem('hearth.theme')), null);
    assertNoProblems(problems);
  });
});

// The quick prompt window itself is tested in quick.test.mjs.
