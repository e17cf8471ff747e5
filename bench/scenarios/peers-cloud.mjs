import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { peerRow } from '../harness.mjs';
import { firstLine, hideGlobalRequire, overlayEnv } from '../peers/cloud/common.mjs';
import * as langchainDaytona from '../peers/cloud/langchain-daytona.mjs';
import * as mastra from '../peers/cloud/mastra.mjs';
import * as openaiAgents from '../peers/cloud/openai-agents.mjs';
import * as rawSdk from '../peers/cloud/raw-sdk.mjs';
import * as ws from '../peers/cloud/ws.mjs';

export const name = 'peers-cloud';

/** The systems compared, in table order: @ws, the floor, then the peers. */
const ADAPTERS = [ws, rawSdk, openaiAgents, langchainDaytona, mastra];

const OPEN_TIMEOUT_MS = 120_000;
const COMMAND_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 60_000;

/**
 * The cloud vendors, each served by its emulator (sandboxes as local containers). The vendor SDKs
 * and everything that loads them are imported only once a global `require` is out of the way (see
 * `hideGlobalRequire`), so that they load as in any ES module program.
 */
const VENDORS = [
  {
    key: 'e2b',
    label: 'E2B',
    async start(image, instance, onLog) {
      const { removeEmulatorSandboxes, startE2BEmulator } = await import('@ws/emulators');
      const { killOwnedSandboxes } = await import('@ws/e2b');
      const emulator = await startE2BEmulator({ templates: { base: image }, instance, onLog });
      const connection = {
        apiKey: emulator.env.E2B_API_KEY,
        apiUrl: emulator.apiUrl,
        sandboxUrl: emulator.sandboxUrl,
      };
      return {
        emulator,
        connection,
        env: emulator.env,
        deleteOwned: (owner) => killOwnedSandboxes(owner, connection),
        removeContainers: () => removeEmulatorSandboxes(undefined, { instance }),
      };
    },
  },
  {
    key: 'daytona',
    label: 'Daytona',
    async start(image, instance, onLog) {
      const { removeDaytonaEmulatorSandboxes, startDaytonaEmulator } = await import('@ws/emulators');
      const { deleteOwnedSandboxes } = await import('@ws/daytona');
      const emulator = await startDaytonaEmulator({ snapshots: { default: image }, instance, onLog });
      const connection = { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl };
      return {
        emulator,
        connection,
        env: emulator.env,
        deleteOwned: (owner) => deleteOwnedSandboxes(owner, connection),
        removeContainers: () => removeDaytonaEmulatorSandboxes(undefined, { instance }),
      };
    },
  },
];

/** Rejects when `promise` has not settled within `ms`. */
function withTimeout(promise, ms, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** `items` rotated by `round`, so that no system always goes first. */
function rotated(items, round) {
  if (items.length === 0) return items;
  const offset = round % items.length;
  return [...items.slice(offset), ...items.slice(0, offset)];
}

/**
 * Side by side on the E2B and then the Daytona emulator: opening a sandbox and running `true` in it,
 * and `true` on an open session, for @ws, the vendor's raw SDK and the peers' sandbox adapters. Every
 * system crosses the same wire; systems take turns round by round.
 */
export async function run({ iterations }) {
  const openRounds = Math.max(2, Math.min(5, Math.round(iterations / 80)));
  const commandRounds = Math.max(3, Math.round(iterations / 20));
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  const rows = [];
  const restoreRequire = hideGlobalRequire();
  try {
    for (const vendor of VENDORS) {
      rows.push(
        ...(await vendorRows(vendor, {
          image,
          openRounds,
          commandRounds,
          problem: problem && `the ${vendor.label} emulator needs Docker: ${problem}`,
        })),
      );
    }
  } finally {
    restoreRequire();
  }
  return rows;
}

async function vendorRows(vendor, { image, openRounds, commandRounds, problem }) {
  const scenarios = {
    open: `${vendor.label} open + first command`,
    command: `${vendor.label} command round trip`,
  };
  const entries = ADAPTERS.map((adapter) => ({
    adapter,
    system: adapter.system,
    version: safeVersion(adapter, vendor.key),
    api: adapter.api?.[vendor.key],
    missing: adapter[vendor.key]
      ? undefined
      : (adapter.missing?.[vendor.key] ?? `no ${vendor.label} sandbox`),
    open: undefined,
    failed: { open: undefined, command: undefined },
    samples: { open: [], command: [] },
    unimplemented: { open: new Set(), command: new Set() },
    closeErrors: { open: new Set(), command: new Set() },
  }));
  if (problem) {
    for (const entry of entries)
      entry.failed.open = entry.failed.command = entry.missing ? undefined : problem;
    return rowsOf(entries, scenarios);
  }

  const instance = `ws-bench-peers-${process.pid}`;
  const owner = `ws-bench-peers-cloud-${process.pid}`;
  const onLog = (line) => {
    if (/: unimplemented /.test(line)) process.stderr.write(`peers-cloud: ${line}\n`);
  };
  let backend;
  try {
    backend = await vendor.start(image, instance, onLog);
  } catch (error) {
    for (const entry of entries)
      entry.failed.open = entry.failed.command = entry.missing
        ? undefined
        : `${vendor.label} emulator: ${firstLine(error)}`;
    return rowsOf(entries, scenarios);
  }
  const { emulator } = backend;
  const restoreEnv = overlayEnv(backend.env);
  const disposers = [];
  const context = {
    connection: backend.connection,
    owner,
    onDispose: (dispose) => disposers.push(dispose),
  };

  /** Runs one step of `entry`, noting what the emulator did not implement while it ran. */
  const step = async (entry, scenario, fn, timeoutMs, what) => {
    const before = emulator.unimplemented.length;
    try {
      return await withTimeout(Promise.resolve().then(fn), timeoutMs, what);
    } finally {
      for (const request of emulator.unimplemented.slice(before)) entry.unimplemented[scenario].add(request);
    }
  };
  const close = async (entry, scenario, session) => {
    try {
      await step(entry, scenario, () => session.close(), CLOSE_TIMEOUT_MS, 'close');
    } catch (error) {
      entry.closeErrors[scenario].add(firstLine(error));
    }
  };

  try {
    for (const entry of entries) {
      if (entry.missing) continue;
      try {
        entry.open = await entry.adapter[vendor.key](context);
      } catch (error) {
        entry.failed.open = entry.failed.command = `load: ${firstLine(error)}`;
      }
    }
    const runnable = entries.filter((entry) => entry.open);

    // Open + first command: a fresh sandbox per round; deleting it is not timed.
    for (let round = 0; round < openRounds; round++) {
      for (const entry of rotated(runnable, round)) {
        if (entry.failed.open) continue;
        let session;
        try {
          const started = performance.now();
          session = await step(entry, 'open', () => entry.open(), OPEN_TIMEOUT_MS, 'open');
          await step(entry, 'open', () => session.run(), COMMAND_TIMEOUT_MS, 'first command');
          entry.samples.open.push(performance.now() - started);
        } catch (error) {
          entry.failed.open = `round ${round + 1}: ${firstLine(error)}`;
        } finally {
          if (session) await close(entry, 'open', session);
        }
      }
    }

    // Command round trip: one session per system, one untimed command first.
    const sessions = new Map();
    try {
      for (const entry of runnable) {
        if (entry.failed.command) continue;
        try {
          const session = await step(entry, 'command', () => entry.open(), OPEN_TIMEOUT_MS, 'open');
          sessions.set(entry, session);
          await step(entry, 'command', () => session.run(), COMMAND_TIMEOUT_MS, 'warm-up command');
        } catch (error) {
          entry.failed.command = `setup: ${firstLine(error)}`;
        }
      }
      for (let round = 0; round < commandRounds; round++) {
        for (const entry of rotated(runnable, round)) {
          const session = sessions.get(entry);
          if (!session || entry.failed.command) continue;
          try {
            const started = performance.now();
            await step(entry, 'command', () => session.run(), COMMAND_TIMEOUT_MS, 'command');
            entry.samples.command.push(performance.now() - started);
          } catch (error) {
            entry.failed.command = `round ${round + 1}: ${firstLine(error)}`;
          }
        }
      }
    } finally {
      for (const [entry, session] of sessions) await close(entry, 'command', session);
    }
    return rowsOf(entries, scenarios);
  } finally {
    restoreEnv();
    for (const dispose of disposers)
      await Promise.resolve()
        .then(dispose)
        .catch(() => {});
    await backend.deleteOwned(owner).catch(() => []);
    await emulator.close().catch(() => {});
    await backend.removeContainers().catch(() => []);
  }
}

function safeVersion(adapter, vendor) {
  try {
    return adapter.version(vendor);
  } catch {
    return undefined;
  }
}

function rowsOf(entries, scenarios) {
  const rows = [];
  for (const [key, scenario] of Object.entries(scenarios)) {
    for (const entry of entries) {
      const failed = entry.missing ? undefined : entry.failed[key];
      const notes = [];
      if (entry.api && !entry.missing) notes.push(entry.api);
      if (failed && entry.samples[key].length > 0)
        notes.push(`${entry.samples[key].length} sample(s) before the failure`);
      if (entry.unimplemented[key].size > 0)
        notes.push(`emulator unimplemented: ${[...entry.unimplemented[key]].join(', ')}`);
      if (entry.closeErrors[key].size > 0)
        notes.push(`close failed: ${[...entry.closeErrors[key]].join('; ')}`);
      rows.push(
        peerRow({
          scenario,
          system: entry.system,
          version: entry.version,
          samplesMs: failed || entry.missing ? undefined : entry.samples[key],
          missing: entry.missing,
          failed,
          note: notes.length > 0 ? notes.join('; ') : undefined,
        }),
      );
    }
  }
  return rows;
}
