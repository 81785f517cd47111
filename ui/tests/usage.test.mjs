// The Usage screen against the mock core: reachable from the sidebar and with Ctrl+6, its
// summary tiles, real charts (Chart.js on canvas, drawn in the theme's colours), the same
// numbers as tables for screen readers, the period, and axe in both themes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertAxeClean, assertNoProblems, flat, ipcCalls, mockServer, screenshot, session, until } from './harness.mjs';

const server = mockServer();
const url = (hash, scenario) => `${server.origin}/index.html${scenario ? `?scenario=${scenario}` : ''}#/${hash}`;

/** A table row's cells, joined by spaces. */
async function cells(row) {
  return (await row.locator('th, td').allTextContents()).map(flat).join(' ');
}

/**
 * The pixels of every chart's canvas, read from a copy (reading the chart's own canvas back
 * again and again makes Chromium warn): per canvas, how many are painted and which opaque
 * colours, as `r,g,b`.
 */
async function drawn(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.chart canvas')].map((canvas) => {
      if (!(canvas instanceof HTMLCanvasElement) || canvas.width === 0) return { painted: 0, colours: [] };
      const copy = document.createElement('canvas');
      copy.width = canvas.width;
      copy.height = canvas.height;
      const ctx = copy.getContext('2d', { willReadFrequently: true });
      if (!ctx) return { painted: 0, colours: [] };
      ctx.drawImage(canvas, 0, 0);
      const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
      let painted = 0;
      const seen = new Set();
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] > 0) painted++;
        if (data[i + 3] === 255) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
      }
      return { painted, colours: [...seen] };
    }),
  );
}

describe('Usage', () => {
  test('is in the sidebar and on Ctrl+6, with the summary, charts and the period', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('chat'));
    await page.getByRole('textbox', { name: 'Message Hearth' }).waitFor();
    await page.keyboard.press('Control+6');
    await page.getByRole('heading', { level: 1, name: 'Usage' }).waitFor();
    await until(page, () => document.activeElement?.id === 'screen-title');
    assert.match(flat(await page.locator('nav[aria-label="Main"] [aria-current="page"]').textContent()), /Usage/);

    await page.locator('[data-testid="tile-spent"]').waitFor();
    assert.match(flat(await page.locator('[data-testid="tile-spent"]').textContent()), /^Spent \$\d+\.\d\d \d+ calls$/);
    assert.match(flat(await page.locator('[data-testid="tile-cache"]').textContent()), /^Prompt cache \d+ % of prompt tokens/);
    assert.match(
      flat(await page.locator('[data-testid="tile-routing"]').textContent()),
      /^Answers \d+ \d+ fast · \d+ main \(\d+ improved\) · \d+ saved$/,
    );
    assert.match(flat(await page.locator('[data-testid="tile-saved"]').textContent()), /^Routing saved \$\d+\.\d\d fast answers/);

    // Three charts, each painted, each an image with a summary in words.
    const charts = page.locator('.chart[role="img"]');
    assert.equal(await charts.count(), 3);
    assert.match((await charts.first().getAttribute('aria-label')) ?? '', /^Spend per day, 30 days: \$/);
    await until(page, () => [...document.querySelectorAll('.chart canvas')].every((c) => c instanceof HTMLCanvasElement && c.width > 0));
    const pictures = await drawn(page);
    assert.equal(pictures.length, 3);
    for (const picture of pictures) {
      assert.ok(picture.painted > 500, 'each chart is drawn');
      // The bars are in the theme's accent colour (light: #a3410f).
      assert.ok(picture.colours.includes('163,65,15'), 'accent-coloured bars');
    }
    // Latency per model is always listed.
    const models = page.locator('[data-testid="usage-models"] tbody tr');
    assert.equal(await models.count(), 3);
    assert.match(await cells(models.first()), /^openai\/gpt-4o \d+ [\d,]+ [\d,]+ [\d,]+ [\d,]+ \/ [\d,]+ ms \$\d+\.\d+$/);

    await page.getByLabel('Period').selectOption({ label: 'Last 7 days' });
    await until(page, () => /^Spend per day, 7 days/.test(document.querySelector('.chart[role="img"]')?.getAttribute('aria-label') ?? ''));
    const asked = await ipcCalls(page, 'get_usage');
    assert.equal(asked.length, 2);
    assert.match(asked[1].since, /^\d{4}-\d\d-\d\d$/);
    assertNoProblems(problems);
  });

  test('the table view has every figure the charts draw', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('usage'));
    await page.locator('.chart canvas').first().waitFor();
    await page.getByRole('radio', { name: 'Tables' }).check();
    assert.equal(await page.locator('.chart').count(), 0);
    const slots = page.locator('[data-testid="usage-slots"] tbody th');
    assert.deepEqual((await slots.allTextContents()).map(flat), ['Answers', 'Learning memories', 'Summarising long chats']);
    const days = page.locator('[data-testid="usage-days"] tbody tr');
    assert.ok((await days.count()) >= 15);
    assert.match(await cells(days.first()), /^\d{4}-\d\d-\d\d \d+ [\d,]+ [\d,]+ \$\d+\.\d+$/);
    assertNoProblems(problems);
  });

  for (const colorScheme of ['light', 'dark']) {
    test(`charts and tables are accessible and drawn in the theme (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('usage', 'over-budget'));
      await page.locator('[data-testid="tile-today"] meter').waitFor();
      await until(page, () => [...document.querySelectorAll('.chart canvas')].every((c) => c instanceof HTMLCanvasElement && c.width > 0));
      // Dark: the accent is #f0915f.
      const accent = colorScheme === 'dark' ? '240,145,95' : '163,65,15';
      const pictures = await drawn(page);
      assert.equal(pictures.length, 3);
      for (const picture of pictures) assert.ok(picture.colours.includes(accent), `bars in the ${colorScheme} accent`);
      await assertAxeClean(page);
      await screenshot(page, `usage-${colorScheme}`);
      await page.getByRole('radio', { name: 'Tables' }).check();
      await assertAxeClean(page);
      assertNoProblems(problems);
    });
  }
});
