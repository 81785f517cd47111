// Checks on the production bundle (what Tauri ships), built fresh into a temp folder:
// CSP-friendly HTML, relative asset paths, external CSS, and no mock code.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { build } from 'vite';
import { UI_ROOT } from './harness.mjs';

let outDir;
before(async () => {
  outDir = await fs.mkdtemp(path.join(os.tmpdir(), 'hearth-ui-dist-'));
  await build({ root: UI_ROOT, configFile: path.join(UI_ROOT, 'vite.config.ts'), logLevel: 'silent', build: { outDir } });
});
after(async () => {
  if (outDir) await fs.rm(outDir, { recursive: true, force: true });
});

async function files(ext) {
  const names = await fs.readdir(path.join(outDir, 'assets'));
  return names.filter((n) => n.endsWith(ext)).map((n) => path.join(outDir, 'assets', n));
}

for (const page of ['index.html', 'quick.html']) {
  test(`${page}: no inline scripts or styles, only relative local assets`, async () => {
    const html = await fs.readFile(path.join(outDir, page), 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length > 0);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs, /\bsrc="\.\/assets\/[^"]+\.js"/, 'scripts are external files');
      assert.equal(body.trim(), '', 'no inline script code');
    }
    assert.doesNotMatch(html, /<style\b/, 'no <style> blocks');
    assert.doesNotMatch(html, /\sstyle=/, 'no style attributes');
    assert.doesNotMatch(html, /\son[a-z]+=/, 'no inline event handlers');
    assert.match(html, /<link rel="stylesheet"[^>]*href="\.\/assets\/[^"]+\.css"/, 'CSS is an external file');
    for (const [, url] of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      assert.ok(url.startsWith('./'), `relative URL: ${url}`);
    }
  });
}

test('JS: no mocks, no eval, no injected <style>, no remote URLs', async () => {
  const js = await files('.js');
  assert.ok(js.length > 0);
  for (const file of js) {
    const code = await fs.readFile(file, 'utf8');
    const name = path.basename(file);
    for (const needle of ['__ipcCalls', '__hearthMock', 'key_missing', 'shouldMockEvents']) {
      assert.ok(!code.includes(needle), `${name} contains mock code (${needle})`);
    }
    assert.ok(!/\beval\(|new Function\(/.test(code), `${name} uses eval`);
    assert.ok(!/createElement\(["']style["']\)/.test(code), `${name} injects <style>`);
    // URLs may appear only as XML namespaces and in Svelte's error-message doc links (never loaded).
    const hosts = new Set([...code.matchAll(/https?:\/\/([a-z0-9.-]+)/gi)].map((m) => m[1]));
    for (const host of hosts) {
      assert.ok(['www.w3.org', 'svelte.dev'].includes(host), `${name} references a remote host: ${host}`);
    }
    assert.ok(!/(?:fetch|import)\(\s*[`'"]https?:/.test(code), `${name} loads something remote`);
  }
  const names = (await fs.readdir(path.join(outDir, 'assets'))).join(' ');
  assert.doesNotMatch(names, /mock/i, 'no mocks chunk');
});

test('JS: only the registered highlight.js languages ship, not the full build', async () => {
  const code = (await Promise.all((await files('.js')).map((file) => fs.readFile(file, 'utf8')))).join('\n');
  assert.ok(code.includes('registerLanguage'), 'highlight.js core is bundled');
  for (const language of ['Python', 'Rust', 'TypeScript']) {
    assert.ok(code.includes(`name:\`${language}\``) || code.includes(`name:"${language}"`), `${language} is registered`);
  }
  for (const language of ['AppleScript', 'Mathematica', 'COBOL', 'Haskell']) {
    assert.ok(!code.includes(`name:\`${language}\``) && !code.includes(`name:"${language}"`), `${language} is not bundled`);
  }
});

test('CSS: local only (no @import or url() to the network, no remote fonts)', async () => {
  const css = await files('.css');
  assert.ok(css.length > 0);
  for (const file of css) {
    const code = await fs.readFile(file, 'utf8');
    assert.ok(!/@import|@font-face|url\(\s*["']?https?:/i.test(code), path.basename(file));
  }
});
