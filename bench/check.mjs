#!/usr/bin/env node
// The speed check CI runs (.ci/run, after the tests): the ratios that matter most, each measured
// interleaved against its floor in this run, compared with the limits in bench/guards.json. A row
// past its limit is measured once more and fails only if it is past it again (a real regression
// is past it both times; a burst of noise rarely is). Exit code 1 when a row fails, 0 otherwise.
//
//   node bench/check.mjs                 every row
//   node bench/check.mjs bwrap docker    some rows
//
// Under CI=true a row whose engine is missing (bubblewrap, Docker, ripgrep) fails; elsewhere it is
// skipped with the reason. It needs the built packages (npm run setup) and, for the Docker row, the
// workspace image (docker/build-image.sh).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BubblewrapWorkspace, bubblewrapProblem } from '@ws/bwrap';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '@ws/docker';
import { LocalWorkspace } from '@ws/local';
import Docker from 'dockerode';
import { bashTrue, interleave, median } from './harness.mjs';
import { ensureTree } from './tree.mjs';

const guards = JSON.parse(readFileSync(join(import.meta.dirname, 'guards.json'), 'utf8')).rows;
const ci = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

/** Runs a process to its end, its output read and dropped; resolves with its exit code. */
function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe', ...(options.fd3 ? ['pipe'] : [])],
    });
    child.stdout.resume();
    child.stderr.resume();
    child.stdio[3]?.resume();
    child.once('error', reject);
    child.once('close', resolve);
  });
}

function hasCommand(command) {
  return new Promise((resolve) => {
    const child = spawn(command, ['--version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

/**
 * The rows: each `measure()` resolves to `{ subjectMs, floorMs }` samples taken interleaved, or to
 * `{ skipped }` when its engine is missing. What each floor does is what the subject does minus our
 * code (see bench/README.md).
 */
const ROWS = {
  // A command on the host: LocalWorkspace's exec against child_process.spawn of the same argv.
  local: async () => {
    const workdir = await mkdtemp(join(tmpdir(), 'ws-check-local-'));
    const workspace = await LocalWorkspace.open({ hostWorkdir: workdir });
    try {
      const sandbox = workspace.getSandbox();
      return await interleave({
        subject: () => sandbox.exec(['true']),
        floor: () => run('true', []),
        iterations: 150,
        warmup: 20,
      });
    } finally {
      await workspace.close();
      await rm(workdir, { recursive: true, force: true });
    }
  },

  // Bash in bubblewrap against bare bubblewrap with the workspace's own mounts, namespaces and
  // status descriptor: the argv of the workspace's own sandbox, minus what our code adds around it
  // (the tool, the exec plumbing, the join of the workspace's cgroups).
  bwrap: async () => {
    const problem = bubblewrapProblem();
    if (problem) return { skipped: problem };
    const root = await mkdtemp(join(tmpdir(), 'ws-check-bwrap-'));
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(root, 'work'),
      hostRuntimeDir: join(root, 'runtime'),
    });
    try {
      await workspace.gatewayReady();
      // The workspace's own BwrapSandbox (its provider's), read here only: the floor's argv is then
      // exactly the one the workspace runs, built by the same code from the same mounts.
      const own = workspace.provider?.sandbox;
      if (!own?.argv) throw new Error("the bubblewrap workspace's sandbox is not where the check reads it");
      const argv = own.argv(['/bin/sh', '-c', 'true'], '/workspace');
      const bare = argv.slice(argv.indexOf('--', argv.indexOf('ws-bwrap-join')) + 1);
      const floorArgv = argv.includes('ws-bwrap-join') ? bare : argv;
      return await interleave({
        subject: () => bashTrue(workspace),
        floor: () => run(floorArgv[0], floorArgv.slice(1), { fd3: true }),
        iterations: 60,
        warmup: 10,
      });
    } finally {
      await workspace.close();
      await rm(root, { recursive: true, force: true });
    }
  },

  // Bash in Docker (through the gateway once it runs) against a raw Engine-API exec in the same container.
  docker: async () => {
    const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
    const problem = await dockerProblem(image);
    if (problem) return { skipped: problem };
    const owner = `ws-check-${process.pid}`;
    const root = await mkdtemp(join(tmpdir(), 'ws-check-docker-'));
    try {
      const workspace = await DockerWorkspace.open({
        image,
        owner,
        workspaceId: `check-${Date.now().toString(36)}`,
        hostWorkdir: join(root, 'work'),
      });
      try {
        const container = new Docker().getContainer(workspace.containerName);
        const rawExec = async () => {
          const exec = await container.exec({
            Cmd: ['/bin/sh', '-c', 'true'],
            AttachStdout: true,
            AttachStderr: true,
          });
          const stream = await exec.start({ hijack: true, stdin: false });
          stream.resume();
          await new Promise((resolve) => stream.once('end', resolve).once('close', resolve));
          return (await exec.inspect()).ExitCode;
        };
        // The gateway starts once the workspace is in use: the warm-up brings it up.
        for (let index = 0; index < 20; index++) await bashTrue(workspace);
        await new Promise((resolve) => setTimeout(resolve, 400));
        return await interleave({
          subject: () => bashTrue(workspace),
          floor: rawExec,
          iterations: 40,
          warmup: 5,
        });
      } finally {
        await workspace.destroy();
      }
    } finally {
      await removeOwnedContainers(owner).catch(() => []);
      await rm(root, { recursive: true, force: true });
    }
  },

  // A fresh process that imports @ws/local, opens a workspace, runs one command and closes, against `node -e 0`.
  'cold-start': async () => {
    const workdir = await mkdtemp(join(tmpdir(), 'ws-check-cold-'));
    const script = join(import.meta.dirname, 'fixtures', 'cold-start.mjs');
    const node = async (args) => {
      const code = await run(process.execPath, args);
      if (code !== 0) throw new Error(`node ${args.join(' ')} exited with ${code}`);
    };
    try {
      return await interleave({
        subject: () => node([script, workdir]),
        floor: () => node(['-e', '0']),
        iterations: 16,
        warmup: 2,
      });
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  },

  // Glob newest first over a 10 000-file tree against ripgrep listing the same files.
  glob: async () => {
    if (!(await hasCommand('rg'))) return { skipped: 'ripgrep (rg) is not installed' };
    const tree = ensureTree({ files: 10_000, averageBytes: 300 });
    const workdir = await mkdtemp(join(tmpdir(), 'ws-check-glob-'));
    await mkdir(workdir, { recursive: true });
    const workspace = await LocalWorkspace.open({ hostWorkdir: workdir });
    try {
      const glob = (await workspace.listTools()).find((tool) => tool.name === 'Glob');
      const excludes = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl'].flatMap((dir) => ['--glob', `!${dir}`]);
      return await interleave({
        subject: async () => {
          const result = await glob.call({ pattern: '**/*.ts', path: tree });
          if (result.isError) throw new Error(result.content[0].text);
        },
        floor: () => run('rg', ['--files', '--hidden', '--no-ignore', '-g', '**/*.ts', ...excludes, tree]),
        iterations: 20,
        warmup: 3,
      });
    } finally {
      await workspace.close();
      await rm(workdir, { recursive: true, force: true });
    }
  },
};

const { positionals } = parseArgs({ allowPositionals: true });
const unknown = positionals.filter((name) => !ROWS[name]);
if (unknown.length > 0) {
  console.error(`unknown row(s): ${unknown.join(', ')}; known: ${Object.keys(ROWS).join(', ')}`);
  process.exit(2);
}
const names = positionals.length > 0 ? positionals : Object.keys(ROWS);

const started = performance.now();
const results = [];
for (const name of names) {
  const guard = guards[name];
  if (!guard) throw new Error(`bench/guards.json has no limit for the row ${name}`);
  const attempts = [];
  let skipped;
  for (let attempt = 0; attempt < 2; attempt++) {
    const began = performance.now();
    const samples = await ROWS[name]();
    if (samples.skipped) {
      skipped = samples.skipped;
      break;
    }
    const ratio = median(samples.subjectMs) / median(samples.floorMs);
    attempts.push({
      ratio,
      subjectMs: median(samples.subjectMs),
      floorMs: median(samples.floorMs),
      seconds: (performance.now() - began) / 1000,
    });
    if (ratio <= guard.limit) break;
  }
  const last = attempts.at(-1);
  const verdict = skipped
    ? ci
      ? 'FAILED (engine missing under CI=true)'
      : 'skipped'
    : last.ratio <= guard.limit
      ? attempts.length > 1
        ? 'ok (on the second measurement)'
        : 'ok'
      : 'FAILED';
  results.push({ name, guard, attempts, skipped, verdict });
  console.log(
    `${name}: ${
      skipped
        ? `skipped: ${skipped}`
        : attempts
            .map(
              (one) =>
                `${one.ratio.toFixed(2)}× (${one.subjectMs.toFixed(2)} ms over ${one.floorMs.toFixed(2)} ms, ${one.seconds.toFixed(1)} s)`,
            )
            .join(', then ')
    } — limit ${guard.limit}×, goal ${guard.goal}×: ${verdict}`,
  );
}

console.log(`\nbench check (${((performance.now() - started) / 1000).toFixed(1)} s)`);
const width = Math.max(...results.map((row) => guards[row.name].subject.length));
for (const row of results)
  console.log(
    `  ${row.guard.subject.padEnd(width)}  ${row.skipped ? '   -  ' : `${row.attempts.at(-1).ratio.toFixed(2)}×`.padStart(6)}  limit ${`${row.guard.limit}×`.padEnd(6)}  ${row.verdict}`,
  );
const failed = results.filter((row) => row.verdict.startsWith('FAILED'));
if (failed.length > 0) {
  console.log(
    `\n${failed.length} row(s) failed: ${failed.map((row) => row.name).join(', ')}. A ratio past its limit twice is a speed regression (bench/guards.json says how each limit was set).`,
  );
  process.exit(1);
}
