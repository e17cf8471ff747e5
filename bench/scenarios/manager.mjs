import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { WorkspaceManager } from '@ws/core';
import { gcLocal, LocalWorkspace, localWorkspaces } from '@ws/local';
import { interleave, median, metricRow, quantile, ratioRow } from '../harness.mjs';

export const name = 'manager';

const WORKSPACES = 1000;
const SCENARIO = `WorkspaceManager, ${WORKSPACES} local workspaces`;
const here = fileURLToPath(import.meta.url);

/** Memory in use after a full collection (needs `--expose-gc`, which the child is started with). */
async function settledMemory() {
  for (let round = 0; round < 3; round++) {
    globalThis.gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  // `external` counts the array buffers too.
  const { rss, heapUsed, external } = process.memoryUsage();
  return { rss, heap: heapUsed + external };
}

/**
 * The measurement, in a child of its own (`node --expose-gc`): memory is measured from a clean
 * baseline and nothing else of the bench shares the heap. Resolves with the bench rows.
 */
async function measure(iterations) {
  const base = await mkdtemp(join(tmpdir(), 'ws-bench-manager-'));
  try {
    const manager = new WorkspaceManager({
      factory: localWorkspaces({ baseDir: join(base, 'managed') }),
      // Room for the cold ids measured after the burst too: none of their acquires waits for an eviction.
      maxOpen: 2 * WORKSPACES,
      idleTtlMs: Number.POSITIVE_INFINITY,
    });
    const events = { open: 0, close: 0, evict: 0 };
    for (const event of Object.keys(events)) manager.on(event, () => events[event]++);
    // Warm the code paths (and the file system) once, then start from a settled heap.
    await (await manager.acquire({ workspaceId: 'warm-up' })).release();
    await manager.closeAll();
    // stdout (a pipe to the parent) is made on first use: made now, it is part of the baseline.
    process.stdout.write('');
    const before = await settledMemory();
    const resources = process.getActiveResourcesInfo().length;

    // 1 000 acquires at once, each of a new id: every one creates and initializes its workspace.
    const ids = Array.from({ length: WORKSPACES }, (_, index) => `w${index}`);
    const burstStarted = performance.now();
    const burst = await Promise.all(
      ids.map(async (workspaceId) => {
        const started = performance.now();
        const lease = await manager.acquire({ workspaceId });
        return { lease, ms: performance.now() - started };
      }),
    );
    const burstMs = performance.now() - burstStarted;
    for (const { lease } of burst) lease.release();
    const stats = manager.stats();
    if (stats.open !== WORKSPACES)
      throw new Error(`expected ${WORKSPACES} open, got ${JSON.stringify(stats)}`);
    const idle = await settledMemory();
    const burstLatencies = burst.map(({ ms }) => ms);

    // Warm acquire: an open id (lease taken and released) against a Map lookup and initialize() of an
    // open workspace, which is what a hand-written cache does per request.
    const plain = new Map();
    for (const workspaceId of ids.slice(0, 50)) {
      const workspace = new LocalWorkspace({ workspaceId, hostWorkdir: join(base, 'plain', workspaceId) });
      await workspace.initialize();
      plain.set(workspaceId, workspace);
    }
    let turn = 0;
    const warm = await interleave({
      subject: async () => {
        const lease = await manager.acquire({ workspaceId: ids[turn++ % 50] });
        lease.release();
      },
      floor: async () => {
        await plain.get(ids[turn++ % 50]).initialize();
      },
      iterations,
    });

    // Cold acquire, one at a time: a new id through the manager against the same workspace opened by
    // hand (new LocalWorkspace + initialize). The manager holds the 1 000 open meanwhile.
    let cold = 0;
    const colds = await interleave({
      subject: async () => {
        await manager.acquire({ workspaceId: `cold-${cold++}` }).then((lease) => lease.release());
      },
      floor: async () => {
        const workspaceId = `cold-${cold++}`;
        const workspace = new LocalWorkspace({ workspaceId, hostWorkdir: join(base, 'plain', workspaceId) });
        await workspace.initialize();
        plain.set(workspaceId, workspace);
      },
      iterations: Math.min(iterations, 200),
      warmup: 5,
    });

    // Everything closes, and nothing is left: no workspace, no timer or handle, no temporary file.
    const closing = manager.stats().open;
    const closeStarted = performance.now();
    await manager.closeAll();
    const closeMs = performance.now() - closeStarted;
    await Promise.all([...plain.values()].map((workspace) => workspace.close()));
    const after = manager.stats();
    const leftStates = burst.filter(({ lease }) => lease.workspace.state !== 'closed').length;
    if (Object.values(after).some((count) => count !== 0) || leftStates !== 0)
      throw new Error(`left after closeAll: ${JSON.stringify(after)}, ${leftStates} not closed`);
    // A file operation of the last close may still be settling in libuv.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const leftResources = process.getActiveResourcesInfo().length - resources;
    if (leftResources > 0)
      throw new Error(`left after closeAll: ${process.getActiveResourcesInfo().join(', ')}`);
    const leftovers = await gcLocal({ roots: [base], olderThanMs: 0, dryRun: true });
    if (leftovers.listed.length > 0)
      throw new Error(`temporary files left: ${leftovers.listed.map((entry) => entry.name).join(', ')}`);
    const managed = (await readdir(join(base, 'managed'))).length;
    if (events.open !== events.close || events.evict !== 0 || managed !== events.open)
      throw new Error(`${JSON.stringify(events)} for ${managed} workdirs`);
    await manager[Symbol.asyncDispose]();
    // What this bench still holds goes: what is left is what the manager keeps.
    burst.length = 0;
    plain.clear();
    const closed = await settledMemory();

    const kib = (bytes) => bytes / 1024;
    return [
      ratioRow({
        scenario: SCENARIO,
        subject: 'acquire + release, warm id',
        floor: 'Map.get + initialize() of an open workspace',
        samples: warm,
        target: 3,
      }),
      ratioRow({
        scenario: SCENARIO,
        subject: 'acquire + release, cold id',
        floor: 'new LocalWorkspace + initialize()',
        samples: colds,
        target: 1.2,
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'RSS per idle workspace',
        value: kib(idle.rss - before.rss) / WORKSPACES,
        unit: 'KiB',
        target: 64,
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'heap + external per idle workspace',
        value: kib(idle.heap - before.heap) / WORKSPACES,
        unit: 'KiB',
        target: 32,
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'heap kept after closeAll, per workspace',
        value: kib(Math.max(0, closed.heap - before.heap)) / WORKSPACES,
        unit: 'KiB',
        target: 2,
      }),
      metricRow({
        scenario: SCENARIO,
        subject: `${WORKSPACES} acquires at once, total`,
        value: burstMs,
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'that burst, per workspace',
        value: burstMs / WORKSPACES,
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'acquire in that burst, median',
        value: median(burstLatencies),
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'acquire in that burst, p95',
        value: quantile(burstLatencies, 0.95),
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'warm acquire, median',
        value: median(warm.subjectMs) * 1000,
        unit: 'µs',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'warm acquire, p95',
        value: quantile(warm.subjectMs, 0.95) * 1000,
        unit: 'µs',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'cold acquire, median',
        value: median(colds.subjectMs),
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: 'cold acquire, p95',
        value: quantile(colds.subjectMs, 0.95),
        unit: 'ms',
      }),
      metricRow({
        scenario: SCENARIO,
        subject: `closeAll of ${closing} workspaces`,
        value: closeMs,
        unit: 'ms',
      }),
    ];
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

/**
 * 1 000 local workspaces open at once through a WorkspaceManager: memory per idle workspace, acquire
 * latency (in a burst, warm and cold, the last two against opening by hand), then closeAll leaving
 * nothing. Measured in a `node --expose-gc` child.
 */
export async function run({ iterations }) {
  const child = spawn(
    process.execPath,
    ['--expose-gc', here, '--child', '--iterations', String(iterations)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`the manager bench child exited with ${code}`);
  return JSON.parse(out);
}

if (process.argv[1] === here && process.argv.includes('--child')) {
  const { values } = parseArgs({
    options: { child: { type: 'boolean' }, iterations: { type: 'string', default: '400' } },
  });
  if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
  process.stdout.write(JSON.stringify(await measure(Number(values.iterations))));
}
