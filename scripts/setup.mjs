#!/usr/bin/env node
// Brings a checkout to a runnable state with nothing but Node.js and npm on the machine:
// installs dependencies with the pinned pnpm (through npx when pnpm is not on PATH) and builds
// every package: its JavaScript with tsup (through turbo, package by package), then the declarations
// of all of them with one TypeScript program (tsconfig.build.json, see scripts/declarations.mjs).
// Each step is skipped when nothing it depends on changed, so running it before every `npm test` /
// `npm run demo` costs about a second once the tree is set up.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as declarations from './declarations.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM_VERSION = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager.split(
  '@',
)[1];
const MIN_NODE = [20, 18];

function fail(message) {
  console.error(`setup: ${message}`);
  process.exit(1);
}

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
  fail(`Node.js >= ${MIN_NODE.join('.')} is required, this is ${process.versions.node}`);
}

// The local pnpm (a root devDependency) must be on PATH for turbo, which looks the package manager up.
// Turborepo's telemetry is off (and so its first-run banner is never printed) for every build here.
const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  PATH: `${join(root, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}`,
};

function run(command, args, label) {
  const started = Date.now();
  process.stderr.write(`setup: ${label}…\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (result.error) fail(`${label} could not start: ${result.error.message}`);
  if (result.status !== 0) fail(`${label} failed with exit code ${result.status}`);
  process.stderr.write(`setup: ${label} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

function pnpmCommand() {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0 && probe.stdout.trim() === PNPM_VERSION) return ['pnpm', []];
  return ['npx', ['--yes', `pnpm@${PNPM_VERSION}`]];
}

function installFingerprint() {
  const hash = createHash('sha256');
  hash.update(process.versions.node);
  for (const file of ['pnpm-lock.yaml', 'pnpm-workspace.yaml']) {
    const path = join(root, file);
    if (existsSync(path)) hash.update(readFileSync(path));
  }
  return hash.digest('hex');
}

const stamp = join(root, 'node_modules', '.ws-setup-stamp');
const fingerprint = installFingerprint();
const installed = existsSync(stamp) && readFileSync(stamp, 'utf8') === fingerprint;
if (!installed) {
  const [command, prefix] = pnpmCommand();
  const frozen = existsSync(join(root, 'pnpm-lock.yaml')) ? ['--frozen-lockfile'] : [];
  run(command, [...prefix, 'install', ...frozen], `installing dependencies with pnpm ${PNPM_VERSION}`);
  writeFileSync(stamp, fingerprint);
}

/** `run` without waiting: resolves with undefined once the command succeeded, or with what went wrong. */
function start(command, args, label) {
  const started = Date.now();
  process.stderr.write(`setup: ${label}…\n`);
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', env });
    child.on('error', (error) => resolve(`${label} could not start: ${error.message}`));
    child.on('exit', (code, signal) => {
      if (code !== 0) return resolve(`${label} failed with ${signal ?? `exit code ${code}`}`);
      process.stderr.write(`setup: ${label} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
      resolve(undefined);
    });
  });
}

/**
 * The packages' declarations (scripts/declarations.mjs): one tsc program over every package's sources,
 * incremental, into a tree of its own (node_modules/.cache/ws-types), so it runs beside the JavaScript
 * builds. A type error fails the build. Resolves with what went wrong, if anything.
 */
async function emitDeclarations(print) {
  declarations.forget(root);
  const tsc = [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', declarations.BUILD_TSCONFIG];
  const label = `emitting declarations (tsc -p ${declarations.BUILD_TSCONFIG})`;
  const failed = await start(process.execPath, tsc, label);
  if (failed) return failed;
  if (declarations.missing(root).length > 0) {
    // tsc's incremental state says it wrote files that are gone: emit everything again.
    declarations.forgetIncremental(root);
    const again = await start(process.execPath, tsc, `${label} from scratch`);
    if (again) return again;
  }
  declarations.prune(root);
  const problems = declarations.checkDeclarations(root);
  if (problems.length > 0)
    return `the declarations would not work for a consumer of the packages:\n  ${problems.join('\n  ')}`;
  declarations.record(root, print);
  return undefined;
}

if (process.env.WS_SETUP_SKIP_BUILD !== '1') {
  // The JavaScript (tsup, package by package through turbo) and the declarations at the same time; the
  // one tsc is skipped when none of its inputs changed since it last succeeded.
  const print = declarations.fingerprint(root);
  const problems = await Promise.all([
    start(
      join(root, 'node_modules', '.bin', 'turbo'),
      ['run', 'build', '--output-logs=errors-only'],
      'building packages',
    ),
    declarations.emitted(root, print) ? undefined : emitDeclarations(print),
  ]);
  const problem = problems.find(Boolean);
  if (problem) fail(problem);
  // Each package's part of the emitted tree into its dist/, once tsup has emptied and refilled it.
  const { written, deleted, packages } = declarations.syncDeclarations(root);
  if (written + deleted > 0)
    process.stderr.write(
      `setup: declarations: ${written} written, ${deleted} deleted in the dist/ of ${packages} packages\n`,
    );
}
