// @ws side by side with its peers (the OpenAI Agents SDK's sandboxes, deepagents' backends, Mastra's
// workspace) on this machine: the same operation through each system's public API, measured
// interleaved round by round (A, B, C, floor, then the next round in another order) so that noise
// hits all alike. A system without the feature gets a `missing` row with the reason; one that
// fails gets a `failed` row with the error's first line, and the others go on.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { peerRow } from '../harness.mjs';
import { BENCH_LABEL, MissingFeature } from '../peers/local/common.mjs';
import { ensureTree } from '../tree.mjs';

export const name = 'peers-local';

const ADAPTERS = ['ws', 'openai-agents', 'deepagents', 'mastra'];
const IMAGE = process.env.WS_DOCKER_IMAGE ?? 'ws-workspace:bookworm';
const OWNER = 'ws-bench-peers';
const FIXTURES = join(import.meta.dirname, '../fixtures/peers');
const NODE_NOTE = { Mastra: 'declares Node >=22; run on Node ' + process.versions.node };

/** The first line of an error's message. */
function firstLine(error) {
  return String(error?.message ?? error).split('\n')[0];
}

/** Spawns argv, drains its output and resolves to its stdout when it exits 0. */
function runProcess(argv, { cwd, okCodes = [0] } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      if (stdout.length < 65536) stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      if (stderr.length < 65536) stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) =>
      okCodes.includes(code)
        ? resolve(stdout)
        : reject(new Error(`${argv.slice(0, 3).join(' ')} exited ${code}: ${stderr.trim()}`)),
    );
  });
}

/** A raw Engine-API `docker exec`: create, start attached, read to the end, inspect. */
async function rawExec(container, cmd) {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  stream.resume();
  await new Promise((resolve) => stream.once('end', resolve).once('close', resolve));
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`docker exec exited ${ExitCode}`);
}

/** Engine API: a fresh labelled container, started, sleeping until removed. */
async function rawContainer(docker) {
  const container = await docker.createContainer({
    Image: IMAGE,
    Cmd: ['sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'],
    Labels: { [BENCH_LABEL]: '1' },
    HostConfig: { CapDrop: ['ALL'] },
  });
  await container.start();
  return container;
}

/** Removes every container the benchmark made: @ws's by owner, the peers' and the floor's by label. */
async function removeBenchContainers(docker) {
  const { removeOwnedContainers } = await import('@ws/docker');
  await removeOwnedContainers(OWNER, docker).catch(() => []);
  const found = await docker.listContainers({ all: true, filters: { label: [`${BENCH_LABEL}=1`] } });
  await Promise.all(
    found.map((info) =>
      docker
        .getContainer(info.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
}

/**
 * Measures systems interleaved. Each entry is { system, version, note, missing } or one with
 * `setup()` resolving to { op, teardown? } (op resolves to nothing or to { ms, peakRssMB } when it
 * times itself). Returns one row per system.
 */
async function measure({ scenario, entries, rounds, warmup = 1 }) {
  const live = [];
  const rows = new Map();
  const row = (entry, fields) =>
    peerRow({ scenario, system: entry.system, version: entry.version, note: entry.note, ...fields });
  try {
    for (const entry of entries) {
      if (entry.missing) {
        rows.set(entry, row(entry, { missing: entry.missing }));
        continue;
      }
      try {
        const { op, teardown } = await entry.setup();
        live.push({ entry, op, teardown, samples: [], peaks: [] });
      } catch (error) {
        rows.set(
          entry,
          error instanceof MissingFeature
            ? row(entry, { missing: error.message })
            : row(entry, { failed: firstLine(error) }),
        );
      }
    }
    for (let round = 0; round < warmup + rounds; round++) {
      const running = live.filter((one) => !one.failed);
      // Rotate the order every round so that no system always goes first.
      const order = running.map((_, index) => running[(index + round) % running.length]);
      for (const one of order) {
        try {
          const started = performance.now();
          const result = await one.op();
          const elapsed = performance.now() - started;
          if (round < warmup) continue;
          one.samples.push(result?.ms ?? elapsed);
          if (result?.peakRssMB !== undefined) one.peaks.push(result.peakRssMB);
        } catch (error) {
          one.failed = firstLine(error);
        }
      }
    }
  } finally {
    for (const one of live) {
      try {
        await one.teardown?.();
      } catch (error) {
        one.failed ??= `teardown: ${firstLine(error)}`;
      }
    }
  }
  for (const one of live) {
    rows.set(
      one.entry,
      one.failed
        ? row(one.entry, { failed: one.failed })
        : row(one.entry, {
            samplesMs: one.samples,
            peakRssMB: one.peaks.length > 0 ? Math.max(...one.peaks) : undefined,
          }),
    );
  }
  return entries.map((entry) => rows.get(entry));
}

/** One entry per adapter for `feature` on `backend`, plus the floor, built by `make`. */
function systemsFor(adapters, { feature, backend, make, floor, noteKey = feature }) {
  const entries = adapters.map(({ name, module, error }) => {
    const system = module?.system ?? name;
    const base = { system, version: module?.version?.() };
    if (error) return { ...base, setup: () => Promise.reject(error) };
    const note = [module.notes?.[noteKey], NODE_NOTE[system]].filter(Boolean).join('; ') || undefined;
    const reason = module.missing[feature] ?? (backend ? module.missing[backend] : undefined);
    if (reason) return { ...base, note, missing: reason };
    return { ...base, note, setup: () => make(name, module) };
  });
  if (floor) entries.push({ system: 'floor', version: `node ${process.versions.node}`, ...floor });
  return entries;
}

/** Opens a session and returns { op, teardown } with op made from the session. */
async function withSession(module, openOptions, opFor) {
  const session = await module.open(openOptions);
  return { op: opFor(session), teardown: () => session.close() };
}

/** The tool-call round trips, the concurrency batch and the in-process file round trips. */
async function localScenarios(adapters, root, iterations) {
  const rows = [];
  const dir = (label) => {
    const path = join(root, `${label}-${Math.random().toString(36).slice(2, 8)}`);
    return mkdir(path, { recursive: true }).then(() => path);
  };
  const rounds = Math.max(10, Math.round(iterations / 4));
  const bwrapRounds = Math.max(10, Math.round(iterations / 8));

  rows.push(
    ...(await measure({
      scenario: 'tool-call round trip, local',
      rounds,
      warmup: 5,
      entries: systemsFor(adapters, {
        feature: 'local',
        make: async (label, module) =>
          withSession(
            module,
            { backend: 'local', workdir: await dir(label) },
            (session) => () => session.run('true'),
          ),
        floor: {
          note: "spawn('/bin/sh', ['-c', 'true'])",
          setup: async () => ({ op: () => runProcess(['/bin/sh', '-c', 'true']) }),
        },
      }),
    })),
  );

  rows.push(
    ...(await measure({
      scenario: 'tool-call round trip, bubblewrap',
      rounds: bwrapRounds,
      warmup: 5,
      entries: systemsFor(adapters, {
        feature: 'bwrap',
        noteKey: 'bwrap',
        make: async (label, module) =>
          withSession(
            module,
            { backend: 'bwrap', workdir: await dir(label) },
            (session) => () => session.run('true'),
          ),
        floor: {
          note: 'bare bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all sh -c true',
          setup: async () => {
            const argv = [
              'bwrap',
              '--ro-bind',
              '/',
              '/',
              '--dev',
              '/dev',
              '--proc',
              '/proc',
              '--unshare-all',
              '--die-with-parent',
              '/bin/sh',
              '-c',
              'true',
            ];
            return { op: () => runProcess(argv) };
          },
        },
      }),
    })),
  );

  const batch = (run) => () =>
    Promise.all(Array.from({ length: 50 }, () => run('sleep 0.05; true'))).then(() => undefined);
  rows.push(
    ...(await measure({
      scenario: '50 concurrent commands, local',
      rounds: Math.max(3, Math.min(6, Math.round(iterations / 50))),
      warmup: 1,
      entries: systemsFor(adapters, {
        feature: 'local',
        noteKey: 'concurrency',
        make: async (label, module) =>
          withSession(module, { backend: 'local', workdir: await dir(label) }, (session) =>
            batch((command) => session.run(command)),
          ),
        floor: {
          note: "50 × spawn('/bin/sh', ['-c', 'sleep 0.05; true']) at once",
          setup: async () => ({ op: batch((command) => runProcess(['/bin/sh', '-c', command])) }),
        },
      }),
    })),
  );

  const oneMB = Buffer.alloc(1024 * 1024, 'x');
  rows.push(
    ...(await measure({
      scenario: 'write + read 1 MB',
      rounds: Math.max(5, Math.round(iterations / 8)),
      warmup: 3,
      entries: systemsFor(adapters, {
        feature: 'files',
        make: async (label, module) => {
          const workdir = await dir(label);
          const path = join(workdir, 'one-mb.bin');
          return withSession(module, { backend: 'local', workdir }, (session) => async () => {
            await session.write(path, oneMB);
            const back = await session.read(path);
            if (back.length !== oneMB.length) throw new Error(`read back ${back.length} bytes`);
          });
        },
        floor: {
          note: 'fs.writeFile + fs.readFile',
          setup: async () => {
            const { readFile, writeFile } = await import('node:fs/promises');
            const path = join(await dir('floor'), 'one-mb.bin');
            return {
              op: async () => {
                await writeFile(path, oneMB);
                await readFile(path);
              },
            };
          },
        },
      }),
    })),
  );

  // 100 MB: every round is a fresh process, which reports its own time and peak RSS.
  const ioChild = (adapter) => async () => {
    const workdir = await dir(`io-${adapter}`);
    try {
      const out = await runProcess([process.execPath, join(FIXTURES, 'io.mjs'), adapter, workdir, '100']);
      return JSON.parse(out.trim().split('\n').pop());
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  };
  const hundredRows = await measure({
    scenario: 'write + read 100 MB',
    rounds: Math.max(1, Math.min(2, Math.round(iterations / 200))),
    warmup: 0,
    entries: systemsFor(adapters, {
      feature: 'files',
      make: async (label) => ({ op: ioChild(label) }),
      floor: { note: 'fs.writeFile + fs.readFile', setup: async () => ({ op: ioChild('floor') }) },
    }),
  });
  for (const row of hundredRows) {
    if (row.peakRssMB !== undefined)
      row.note = [row.note, 'peak RSS of a fresh process'].filter(Boolean).join('; ');
  }
  rows.push(...hundredRows);
  return rows;
}

/** Round trips and whole lives on Docker, against the Engine API. */
async function dockerScenarios(adapters, iterations) {
  const docker = new Docker();
  const rows = [];
  const dockerEntries = (make, floor) =>
    systemsFor(adapters, { feature: 'docker', noteKey: 'docker', make, floor }).map((entry) =>
      entry.system === 'Mastra' && entry.version
        ? {
            ...entry,
            version: `docker ${adapters.find((one) => one.name === 'mastra').module.dockerVersion()}`,
          }
        : entry,
    );
  try {
    try {
      await docker.getImage(IMAGE).inspect();
    } catch (error) {
      const reason = `image ${IMAGE} unavailable: ${firstLine(error)}`;
      for (const scenario of ['tool-call round trip, Docker', 'Docker create + first command + close'])
        rows.push(peerRow({ scenario, system: '@ws', failed: reason }));
      return rows;
    }
    rows.push(
      ...(await measure({
        scenario: 'tool-call round trip, Docker',
        rounds: Math.max(5, Math.round(iterations / 10)),
        warmup: 3,
        entries: dockerEntries(
          (_, module) =>
            withSession(
              module,
              { backend: 'docker', image: IMAGE, owner: OWNER },
              (session) => () => session.run('true'),
            ),
          {
            note: 'raw Engine-API exec (dockerode)',
            setup: async () => {
              const container = await rawContainer(docker);
              return {
                op: () => rawExec(container, ['/bin/sh', '-c', 'true']),
                teardown: () => container.remove({ force: true }),
              };
            },
          },
        ),
      })),
    );
    rows.push(
      ...(await measure({
        scenario: 'Docker create + first command + close',
        rounds: Math.max(1, Math.min(5, Math.round(iterations / 40))),
        warmup: iterations >= 40 ? 1 : 0,
        entries: dockerEntries(
          async (_, module) => ({
            op: async () => {
              const session = await module.open({ backend: 'docker', image: IMAGE, owner: OWNER });
              try {
                await session.run('true');
              } finally {
                await session.close();
              }
            },
          }),
          {
            note: 'Engine API create, start, exec, remove',
            setup: async () => ({
              op: async () => {
                const container = await rawContainer(docker);
                try {
                  await rawExec(container, ['sh', '-c', 'true']);
                } finally {
                  await container.remove({ force: true });
                }
              },
            }),
          },
        ),
      })),
    );
    return rows;
  } finally {
    await removeBenchContainers(docker);
  }
}

/** Grep and Glob over the 100 000-file tree. */
async function searchScenarios(adapters, root, iterations) {
  const tree = ensureTree();
  const rounds = Math.max(2, Math.min(3, Math.round(iterations / 100)));
  const excludes = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl'].flatMap((dir) => ['--glob', `!${dir}`]);
  const query = { regex: 'needle_\\d+', literal: 'needle_' };
  // @ws keeps its state in its workdir, so it opens on a scratch folder and searches the tree by
  // absolute path; the peers open on the tree itself (their search paths are relative to it).
  const searchSession = async (label, module) => {
    const workdir = label === 'ws' ? await mkdtemp(join(root, 'search-')) : tree;
    return module.open({ backend: 'local', workdir, commands: false });
  };
  const rows = [];
  rows.push(
    ...(await measure({
      scenario: 'Grep 100k files',
      rounds,
      warmup: 1,
      entries: systemsFor(adapters, {
        feature: 'grep',
        make: async (label, module) => {
          const session = await searchSession(label, module);
          return { op: () => session.grep(query, tree), teardown: () => session.close() };
        },
        floor: {
          note: 'rg -l needle_\\d+ (search-tree flags)',
          setup: async () => ({
            op: () =>
              runProcess(
                [
                  'rg',
                  '--no-config',
                  '--hidden',
                  ...excludes,
                  '--max-columns',
                  '500',
                  '-l',
                  '-e',
                  query.regex,
                  '--',
                  tree,
                ],
                { okCodes: [0, 1] },
              ),
          }),
        },
      }),
    })),
  );
  rows.push(
    ...(await measure({
      scenario: 'Glob 100k files',
      rounds,
      warmup: 1,
      entries: systemsFor(adapters, {
        feature: 'glob',
        make: async (label, module) => {
          const session = await searchSession(label, module);
          return { op: () => session.glob('**/*.ts', tree), teardown: () => session.close() };
        },
        floor: {
          note: 'rg --files -g **/*.ts',
          setup: async () => ({
            op: () =>
              runProcess(['rg', '--files', '--hidden', '--no-ignore', '-g', '**/*.ts', ...excludes, tree], {
                okCodes: [0, 1],
              }),
          }),
        },
      }),
    })),
  );
  return rows;
}

/** A fresh node process per sample: import, open a local session, run `true`, close. */
async function coldStart(adapters, root, iterations) {
  return measure({
    scenario: 'cold start',
    rounds: Math.max(3, Math.min(10, Math.round(iterations / 40))),
    warmup: 1,
    entries: systemsFor(adapters, {
      feature: 'local',
      noteKey: 'cold',
      make: async (label) => {
        const workdir = await mkdtemp(join(root, `cold-${label}-`));
        const script = join(FIXTURES, `cold-${label}.mjs`);
        return { op: () => runProcess([process.execPath, script, workdir]) };
      },
      floor: {
        note: 'node -e 0',
        setup: async () => ({ op: () => runProcess([process.execPath, '-e', '0']) }),
      },
    }),
  });
}

/** Every scenario of the local comparison, one row per system and scenario. */
export async function run({ iterations }) {
  const adapters = [];
  for (const adapterName of ADAPTERS) {
    try {
      adapters.push({ name: adapterName, module: await import(`../peers/local/${adapterName}.mjs`) });
    } catch (error) {
      adapters.push({ name: adapterName, error });
    }
  }
  const root = await mkdtemp(join(tmpdir(), 'ws-bench-peers-'));
  const rows = [];
  const stage = async (label, fn) => {
    process.stderr.write(`bench: peers-local: ${label}…\n`);
    try {
      rows.push(...(await fn()));
    } catch (error) {
      rows.push(peerRow({ scenario: label, system: '@ws', failed: firstLine(error) }));
    }
  };
  try {
    await stage('local', () => localScenarios(adapters, root, iterations));
    await stage('docker', () => dockerScenarios(adapters, iterations));
    await stage('search', () => searchScenarios(adapters, root, iterations));
    await stage('cold start', () => coldStart(adapters, root, iterations));
    return rows;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
