// Shared test harness: a tiny static server for a built bundle (with the production CSP)
// and a Chromium session driven by playwright-core. Not a test file itself.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const UI_ROOT = path.resolve(import.meta.dirname, '..');
export const DIST_MOCK = path.join(UI_ROOT, 'dist-mock');
export const ARTIFACTS = path.resolve(UI_ROOT, '..', 'artifacts', 'ui');

/** The CSP Tauri will enforce (tauri.conf.json → app.security.csp). */
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ipc: http://ipc.localhost";

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Serve `root` on 127.0.0.1 at a random port. Resolves to { origin, close }. */
export async function serve(root) {
  if (!fs.existsSync(path.join(root, 'index.html'))) {
    throw new Error(`${root}/index.html is missing: run "npm run build:mock" first (npm test does).`);
  }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const relative = decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname);
    const file = path.resolve(root, '.' + relative);
    if (!file.startsWith(root + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, (error, body) => {
      if (error) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'content-security-policy': CSP,
        'cache-control': 'no-store',
      });
      res.end(body);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(undefined));
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no port');
  return {
    origin: `http://127.0.0.1:${address.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve(undefined))),
  };
}

/** @type {Promise<import('playwright-core').Browser> | null} */
let shared = null;

/**
 * One Chromium per test file (process), launched on first use and closed when the file's
 * tests are done: launching a browser costs a second or two, a fresh context a few ms.
 */
function sharedBrowser() {
  if (!shared) {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(`Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH).`);
    }
    shared = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    after(async () => {
      const browser = await shared;
      shared = null;
      await browser?.close();
    });
  }
  return shared;
}

/**
 * A fresh browser context (its own storage, cookies and permissions, like a new profile)
 * with one page. Console errors, page errors and failed requests are collected in
 * `problems`; tests assert it stays empty.
 *
 * @param {{ colorScheme?: 'light' | 'dark', viewport?: { width: number, height: number }, bypassCSP?: boolean }} [options]
 */
export async function openBrowser(options = {}) {
  const browser = await sharedBrowser();
  const context = await browser.newContext({
    colorScheme: options.colorScheme ?? 'light',
    reducedMotion: 'reduce',
    viewport: options.viewport ?? { width: 1120, height: 760 },
    deviceScaleFactor: 1,
    locale: 'en-US',
    bypassCSP: options.bypassCSP ?? false,
  });
  const page = await context.newPage();
  /** @type {string[]} */
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') {
      problems.push(`console.${message.type()}: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
  return {
    context,
    page,
    problems,
    async close() {
      await context.close();
    },
  };
}

/** Wait until `fn(arg)` is truthy in the page (polls on animation frames; no fixed sleeps). */
/** Serves dist-mock/ for the tests of the calling file: its `origin` is set once it is up. */
export function mockServer() {
  const handle = { origin: '' };
  let server;
  before(async () => {
    server = await serve(DIST_MOCK);
    handle.origin = server.origin;
  });
  after(async () => {
    await server?.close();
  });
  return handle;
}

/** A browser for one test, closed when it ends. */
export async function session(t, options) {
  const browser = await openBrowser(options);
  t.after(() => browser.close());
  return browser;
}

export async function until(page, fn, arg) {
  await page.waitForFunction(fn, arg, { timeout: 10_000 });
}

/** Text of the visible <h1> inside <main>. */
export async function heading(page) {
  const h1 = page.locator('main h1');
  await h1.waitFor({ state: 'visible' });
  return (await h1.textContent())?.trim();
}

/**
 * Save `artifacts/ui/<name>.png`: the whole page, or only what the window shows with
 * `{ fullPage: false }` (a modal dialog, whose backdrop covers the window only).
 */
export async function screenshot(page, name, { fullPage = true } = {}) {
  await fsp.mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

/** Whitespace collapsed, ends trimmed. */
export const flat = (text) => (text ?? '').replace(/\s+/g, ' ').trim();

/** The args of every call of `cmd` so far (the mock records them in window.__ipcCalls). */
export async function ipcCalls(page, cmd) {
  return page.evaluate((c) => window.__ipcCalls.filter((call) => call.cmd === c).map((call) => call.args), cmd);
}

export function assertNoProblems(problems) {
  assert.deepEqual(problems, [], 'no console errors/warnings, page errors, CSP violations or failed requests');
}

/** Run axe-core on the page (needs a session with bypassCSP: true) and fail on any violation. */
export async function assertAxeClean(page, where) {
  const hasAxe = await page.evaluate(() => 'axe' in window);
  if (!hasAxe) await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
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
