// Answers as Markdown: rendering (while streaming too), sanitizing, code-block and answer
// copy, links that open nothing, the per-turn usage line and the fallback notice.
// Against the mock core (dist-mock/) with the production CSP.
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

const CODE = 'people = [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]\nby_age = sorted(people, key=lambda p: p["age"])\nprint(by_age[0]["name"])  # Ada';
const CODE_ANSWER_SOURCE = [
  '## Sorting by a key\n\n',
  'Use `sorted` with a `key` function:\n\n',
  '- it returns a **new** list\n',
  '- `reverse=True` sorts from high to low\n\n',
  '```python\npeople = [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]\n',
  'by_age = sorted(people, key=lambda p: p["age"])\n',
  'print(by_age[0]["name"])  # Ada\n```\n\n',
  'That is all it takes.',
].join('');

const server = mockServer();

const url = (scenario, page = 'index.html') =>
  `${server.origin}/${page}${scenario ? `?scenario=${scenario}` : ''}${page === 'index.html' ? '#/chat' : ''}`;

const composer = (page) => page.getByRole('textbox', { name: 'Message Hearth' });
const lastAnswer = (page) => page.locator('[role="log"] article.assistant').last();

async function openConversation(page, scenario, title) {
  await page.goto(url(scenario));
  await composer(page).waitFor();
  await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: title }).click();
  await lastAnswer(page).locator('.usage').waitFor();
}

describe('Markdown answers', () => {
  test('a stored answer renders headings, lists, inline code and a highlighted code block with its language', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'markdown', 'Sorting a list in Python');
    const answer = lastAnswer(page);
    // "##" is the answer's biggest heading: it becomes an <h3> under the pane's <h2>.
    assert.equal(await answer.locator('.markdown h3').textContent(), 'Sorting by a key');
    assert.equal(await answer.locator('.markdown h1, .markdown h2').count(), 0);
    assert.equal(await answer.locator('.markdown ul > li').count(), 2);
    assert.equal(await answer.locator('.markdown li strong').textContent(), 'new');
    assert.deepEqual(await answer.locator('.markdown p code').allTextContents(), ['sorted', 'key']);
    const block = answer.locator('.code-block');
    assert.equal(await block.count(), 1);
    assert.equal(await block.locator('.code-lang').textContent(), 'python');
    assert.equal(await block.locator('pre code').textContent(), CODE);
    assert.equal(await block.locator('pre code').getAttribute('class'), 'hljs language-python');
    assert.ok((await block.locator('pre code .hljs-string').count()) > 0, 'strings are highlighted');
    assert.ok((await block.locator('pre code .hljs-comment').count()) > 0, 'comments are highlighted');
    assert.equal(await block.locator('pre').getAttribute('tabindex'), '0', 'a scrolling block is reachable by keyboard');
    // The user's message is plain text.
    assert.equal(await page.locator('[role="log"] article.user .markdown').count(), 0);
    assertNoProblems(problems);
  });

  test('an XSS payload in an answer is shown as text and never runs', async (t) => {
    const { page, context, problems } = await session(t);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    await openConversation(page, 'markdown', 'Untrusted HTML');
    const answer = lastAnswer(page);
    const text = flat(await answer.locator('.text').textContent());
    assert.match(text, /<img src=x onerror="window\.__xss=1">/, 'the tag is visible as text');
    assert.match(text, /<script>window\.__xss=2<\/script>/);
    assert.match(text, /<b onmouseover="window\.__xss=4">hover<\/b>/);
    await answer.locator('.text').hover();
    const dom = await page.evaluate(() => ({
      xss: window.__xss,
      handlers: document.querySelectorAll('[onerror], [onmouseover], [onclick], [onload]').length,
      images: document.querySelectorAll('[role="log"] img').length,
      scripts: document.querySelectorAll('[role="log"] script').length,
      styles: document.querySelectorAll('[role="log"] [style]').length,
      javascriptLinks: document.querySelectorAll('a[href^="javascript"]').length,
    }));
    assert.deepEqual(dom, { xss: undefined, handlers: 0, images: 0, scripts: 0, styles: 0, javascriptLinks: 0 });

    // The safe link is marked up to open nothing here; the bad one is plain text.
    const safe = answer.getByRole('link', { name: 'safe link' });
    assert.equal(await safe.getAttribute('href'), 'https://example.com/docs');
    assert.equal(await safe.getAttribute('rel'), 'noopener noreferrer nofollow');
    assert.equal(await safe.getAttribute('target'), '_blank');
    assert.equal(await answer.getByRole('link', { name: 'bad link' }).count(), 0);
    assert.match(text, /bad link/);
    // Clicking it opens nothing: the address is copied and the app says so.
    const before = page.url();
    await safe.click();
    await page.getByText('Link copied: https://example.com/docs').waitFor();
    assert.equal(page.url(), before);
    assert.equal(context.pages().length, 1, 'no window was opened');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'https://example.com/docs');
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    // Its price is unknown.
    assert.equal(await answer.locator('.usage').innerText(), 'mystery-model · 912 tokens in · 96 out · cost unknown');
    assertNoProblems(problems);
  });

  test('a code block\'s Copy button copies the code and says "Copied"; "Copy answer" copies the Markdown', async (t) => {
    const { page, context, problems } = await session(t);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    await openConversation(page, 'markdown', 'Sorting a list in Python');
    const copy = lastAnswer(page).locator('button.code-copy');
    assert.equal(await copy.textContent(), 'Copy');
    assert.equal(await copy.getAttribute('aria-label'), 'Copy python code');
    await copy.click();
    await until(page, () => document.querySelector('button.code-copy')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), CODE);
    await page.getByText('Code copied to the clipboard.').waitFor();
    // It goes back to "Copy" after a moment.
    await until(page, () => document.querySelector('button.code-copy')?.textContent === 'Copy');

    const copyAnswer = lastAnswer(page).getByRole('button', { name: 'Copy answer' });
    await copyAnswer.click();
    await lastAnswer(page).getByRole('button', { name: 'Copied answer' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), CODE_ANSWER_SOURCE);
    assertNoProblems(problems);
  });

  test('a streaming answer is rendered as it arrives (the code block appears before the answer is done)', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await composer(page).waitFor();
    await page.evaluate(() => window.__hearthMock.setChatDelay(250));
    await composer(page).fill('Show me some Python code to sort a list');
    await composer(page).press('Enter');
    await lastAnswer(page).locator('.markdown h3').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Stop' }).count(), 1, 'still streaming');
    await lastAnswer(page).locator('.code-block pre code').waitFor();
    assert.equal(await lastAnswer(page).locator('.usage').count(), 0, 'not done yet');
    await lastAnswer(page).locator('.usage').waitFor();
    assert.equal(await lastAnswer(page).locator('.code-block pre code').textContent(), CODE);
    assert.equal(flat(await lastAnswer(page).locator('.markdown > p').last().textContent()), 'That is all it takes.');
    assertNoProblems(problems);
  });
});

describe('Per-turn usage and cost', () => {
  test('stored answers show model, tokens in/out, cached tokens and cost', async (t) => {
    const { page, problems } = await session(t);
    await openConversation(page, 'markdown', 'Sorting a list in Python');
    assert.equal(
      await lastAnswer(page).locator('.usage').innerText(),
      'gpt-4o-mini · 1,830 tokens in · 214 out · 1,024 cached · $0.0031',
    );
    await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Dinner with chickpeas' }).click();
    await until(page, () => document.querySelector('[role="log"] article.assistant .usage')?.textContent === 'llama3.2 · 826 tokens in · 41 out · free (local)');
    assertNoProblems(problems);
  });

  test('a live answer shows the usage of its turn (chat_done.turn)', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url());
    await composer(page).waitFor();
    await composer(page).fill('Hello there');
    await composer(page).press('Enter');
    await lastAnswer(page).locator('.usage').waitFor();
    const done = await page.evaluate(() => window.__ipcCalls.length);
    assert.ok(done > 0);
    // 812 (system) + 1,184 (the tools offered) + 3 (the message).
    assert.match(await lastAnswer(page).locator('.usage').innerText(), /^llama3\.2 · 1,999 tokens in · \d+ out · free \(local\)$/);
    assert.equal(await lastAnswer(page).locator('[data-testid="fallback-notice"]').count(), 0);
    assertNoProblems(problems);
  });

  test('an answer from the fallback model says so, in the main window and in the quick prompt', async (t) => {
    const { page, problems } = await session(t);
    await page.goto(url('fallback'));
    await composer(page).waitFor();
    await composer(page).fill('Hello?');
    await composer(page).press('Enter');
    const notice = lastAnswer(page).locator('[data-testid="fallback-notice"]');
    await notice.waitFor();
    assert.equal(
      flat(await notice.textContent()),
      'The main model (gpt-4o) failed; this answer came from the fallback model llama3.2.',
    );
    assert.match(await lastAnswer(page).locator('.usage').innerText(), /^llama3\.2 · .* · free \(local\)$/);

    await page.setViewportSize({ width: 640, height: 360 });
    await page.goto(url('fallback', 'quick.html'));
    const input = page.getByRole('textbox', { name: 'Ask Hearth' });
    await input.fill('Hello?');
    await input.press('Enter');
    const quickNotice = page.locator('[data-testid="fallback-notice"]');
    await quickNotice.waitFor();
    assert.equal(
      flat(await quickNotice.textContent()),
      'The main model (gpt-4o) failed; this answer came from the fallback model llama3.2.',
    );
    assertNoProblems(problems);
  });
});

describe('Markdown in the quick prompt', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`an answer a cascade improved names the model and why, and keeps the first answer under it (${colorScheme})`, async (t) => {
      // CSP bypassed only for axe's injected script.
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await page.goto(url('cascade'));
      await composer(page).waitFor();
      await composer(page).fill('Hello there');
      await composer(page).press('Enter');
      const improved = lastAnswer(page).locator('[data-testid="improved"]');
      // While the main model answers again, the fast answer is set aside and the reason shown.
      await until(page, () =>
        document
          .querySelector('[role="log"] article.assistant:last-of-type [data-testid="improved"] .improved-label')
          ?.textContent?.includes('llama3.2 is answering again: the fast answer was cut off'),
      );
      assert.ok(!flat(await lastAnswer(page).locator('.text').textContent().catch(() => '')).includes('is about'));
      await lastAnswer(page).locator('.usage').waitFor();
      assert.equal(flat(await improved.locator('.improved-label').textContent()), 'Improved by llama3.2: the fast answer was cut off');
      assert.match(
        await lastAnswer(page).locator('.usage').innerText(),
        /^llama3\.2 \(strong — escalated: the fast answer was cut off\) · /,
      );
      const first = improved.locator('details.first-answer');
      assert.equal(flat(await first.locator('summary').textContent()), 'First answer, from llama3.2:1b');
      assert.equal(await first.locator('.first-text').isVisible(), false);
      await first.locator('summary').click();
      assert.equal(flat(await first.locator('.first-text').textContent()), 'Five miles is about');
      assert.ok(!flat(await lastAnswer(page).locator('.text').textContent()).includes('is about'));
      // Stored the same way: the conversation, opened again, shows the same.
      await page.getByRole('button', { name: 'New chat' }).click();
      await until(page, () => document.querySelectorAll('[role="log"] article.assistant').length === 0);
      await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Hello there' }).click();
      await lastAnswer(page).locator('[data-testid="improved"]').waitFor();
      assert.equal(flat(await improved.locator('.improved-label').textContent()), 'Improved by llama3.2: the fast answer was cut off');
      await assertAxeClean(page);
      await first.locator('summary').click();
      await screenshot(page, `chat-cascade-improved-${colorScheme}`);
      assertNoProblems(problems);
    });
  }

  test('the quick answer is rendered as Markdown with a working code Copy button', async (t) => {
    const { page, context, problems } = await session(t, { viewport: { width: 640, height: 360 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    await page.goto(url(undefined, 'quick.html'));
    const input = page.getByRole('textbox', { name: 'Ask Hearth' });
    await input.fill('Some python code please');
    await input.press('Enter');
    await page.getByRole('button', { name: 'Open in Hearth' }).waitFor();
    const region = page.getByRole('region', { name: 'Answer' });
    // Under the window's (hidden) <h1>, the answer's biggest heading is an <h2>.
    assert.equal(await region.locator('.markdown h2').textContent(), 'Sorting by a key');
    assert.equal(await region.locator('.code-block pre code').textContent(), CODE);
    await region.locator('button.code-copy').click();
    await until(page, () => document.querySelector('button.code-copy')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), CODE);
    assert.deepEqual(await ipcCalls(page, 'send_message'), [
      { conversationId: null, text: 'Some python code please', temporary: false },
    ]);
    assertNoProblems(problems);
  });
});

describe('Markdown: accessibility and screenshots', () => {
  for (const colorScheme of ['light', 'dark']) {
    test(`axe finds no violations on rendered Markdown, code and the XSS sample (${colorScheme})`, async (t) => {
      const { page, problems } = await session(t, { colorScheme, bypassCSP: true });
      await openConversation(page, 'markdown', 'Sorting a list in Python');
      await assertAxeClean(page, `markdown code answer (${colorScheme})`);
      await screenshot(page, `chat-markdown-${colorScheme}`);
      await page.locator('nav[aria-label="Conversations"] button.item').filter({ hasText: 'Untrusted HTML' }).click();
      await page.getByRole('link', { name: 'safe link' }).waitFor();
      await assertAxeClean(page, `markdown xss answer (${colorScheme})`);
      await page.setViewportSize({ width: 640, height: 360 });
      await page.goto(url(undefined, 'quick.html'));
      const input = page.getByRole('textbox', { name: 'Ask Hearth' });
      await input.fill('Some python code please');
      await input.press('Enter');
      await page.getByRole('button', { name: 'Open in Hearth' }).waitFor();
      await assertAxeClean(page, `quick markdown answer (${colorScheme})`);
      await screenshot(page, `quick-markdown-${colorScheme}`);
      assertNoProblems(problems);
    });
  }
});
