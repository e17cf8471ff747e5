// Finds the code examples of the repository's README files, so tests and the consumer smoke test can
// check that each one works as pasted.
//
// A fenced block's info string is its language and, for `js`, what it needs besides Node.js:
//   ```js            runs as an ES module on Node.js 20 with only the @ws packages installed
//   ```js docker     the same, when a Docker engine and the default image are present
//   ```js docker emulators VENDOR
//                    the same, with @ws/emulators and VENDOR's SDK installed (e2b, daytona, k8s,
//                    opensandbox); the package checks run it in the `VENDOR-emulated` install
//   ```js otel       the same, with the OpenTelemetry API and SDK installed (run by the docs tests,
//                    where the repository has them; not by the package checks)
//   ```ts            type-checked as a module (strict, NodeNext)
// A `<!-- example-prelude … -->` comment on the lines right before a fence is prepended to the block
// when it is checked: it declares what a fragment assumes (a `workspace`, a `sessionId`…).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The files that carry examples: the root README, each package's, and the guides in docs/. */
export function readmeFiles(root) {
  const files = [join(root, 'README.md')];
  for (const group of ['packages', 'apps']) {
    const dir = join(root, group);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const file = join(dir, name, 'README.md');
      if (existsSync(file)) files.push(file);
    }
  }
  // The guides in docs/ carry examples too.
  const docs = join(root, 'docs');
  if (existsSync(docs))
    for (const name of readdirSync(docs).sort()) if (name.endsWith('.md')) files.push(join(docs, name));
  return files;
}

/**
 * The `js` and `ts` examples of one Markdown file:
 * `{ id, file, line, lang, needs, code, prelude }`, `id` being `<relative file>:<line>`.
 */
export function examplesOf(file, root) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const examples = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^```(\S+)(.*)$/.exec(lines[index]);
    if (!open) continue;
    const lang = open[1];
    const needs = open[2].trim().split(/\s+/).filter(Boolean);
    const start = index;
    const body = [];
    for (index++; index < lines.length && lines[index] !== '```'; index++) body.push(lines[index]);
    if (index >= lines.length) throw new Error(`${file}:${start + 1}: the code block is never closed`);
    if (lang !== 'js' && lang !== 'ts') continue;
    examples.push({
      id: `${relative(root, file)}:${start + 1}`,
      file,
      line: start + 1,
      lang,
      needs,
      code: `${body.join('\n')}\n`,
      prelude: preludeBefore(lines, start),
    });
  }
  return examples;
}

function preludeBefore(lines, fence) {
  if (lines[fence - 1] !== '-->') return '';
  for (let index = fence - 2; index >= 0; index--) {
    if (lines[index] === '<!-- example-prelude') return `${lines.slice(index + 1, fence - 1).join('\n')}\n`;
    if (lines[index].startsWith('<!--') || lines[index].startsWith('```')) break;
  }
  return '';
}

/** Every example of every README of the repository at `root`. */
export function allExamples(root) {
  return readmeFiles(root).flatMap((file) => examplesOf(file, root));
}

/**
 * The install of scripts/check-packages.mjs that runs a `js` example against the packed tarballs
 * (`local`, `docker`, or `VENDOR-emulated`), or undefined for one it does not run (`otel`, `ts`).
 */
export function packageCheckScenario(example) {
  if (example.lang !== 'js') return undefined;
  const { needs } = example;
  if (needs.length === 0) return 'local';
  if (needs.every((need) => need === 'docker')) return 'docker';
  const vendors = needs.filter((need) => need !== 'docker' && need !== 'emulators');
  const vendor = vendors[0];
  if (!needs.includes('emulators') || vendors.length !== 1) return undefined;
  return ['e2b', 'daytona', 'k8s', 'opensandbox'].includes(vendor) ? `${vendor}-emulated` : undefined;
}
