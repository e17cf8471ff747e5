#!/usr/bin/env node
// Brings a checkout to a runnable state with nothing but Node.js and npm on the machine:
// installs dependencies with the pinned pnpm (through npx when pnpm is not on PATH) and builds
// every package. Both steps are skipped when nothing they depend on changed, so running it before
// every `npm test` / `npm run demo` costs well under a second once the tree is set up.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

if (process.env.WS_SETUP_SKIP_BUILD !== '1') {
  run(
    join(root, 'node_modules', '.bin', 'turbo'),
    ['run', 'build', '--output-logs=errors-only'],
    'building packages',
  );
}
