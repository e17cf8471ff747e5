import { existsSync } from 'node:fs';
import { requireEngine } from '@ws/contract-tests';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import {
  EMULATOR_BIN,
  type EmulatorProcess,
  type FaultProxy,
  freeLoopbackPort,
  launchEmulator,
  startFaultProxy,
} from '@ws/emulators';
import { deleteOwnedSandboxes } from '../src/index.js';

/** The image behind the emulator's `default` snapshot: the one of @ws/docker. */
export const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;

/**
 * Why the emulated suites cannot run here (no engine, image or built emulator), or undefined; under
 * `CI=true` a missing engine throws instead (see `requireEngine`).
 */
export async function emulatorProblem(): Promise<string | undefined> {
  const problem = await dockerProblem(image);
  if (problem) return requireEngine('docker', `the Daytona emulator needs Docker: ${problem}`);
  if (!existsSync(EMULATOR_BIN))
    return requireEngine('build', `${EMULATOR_BIN} is missing: build @ws/emulators first (npm test does)`);
  return undefined;
}

export interface EmulatorConnection {
  apiKey: string;
  apiUrl: string;
}

/**
 * The suites keep many sandboxes running and stopped side by side, past a new organization's totals
 * (10 vCPU, 10 GiB of memory, 30 GiB of disk): their emulators have room for them. The limits
 * themselves are met in daytona-limits.test.ts.
 */
const ROOMY = [
  '--limit',
  'totalCpu=100000',
  '--limit',
  'totalMemoryGiB=100000',
  '--limit',
  'totalDiskGiB=1000000',
];

let emulator: Promise<EmulatorProcess> | undefined;

/** The connection options of one emulator per test file, started on first use (`ws-emulator daytona`). */
export async function connection(): Promise<EmulatorConnection> {
  // The suites never use the network from inside a sandbox: sandboxes without one start sooner.
  emulator ??= launchEmulator('daytona', ['--snapshot', `default=${image}`, '--no-network', ...ROOMY], {
    trace: process.env.WS_DAYTONA_TRACE !== undefined,
  });
  const { env } = await emulator;
  return { apiKey: env.DAYTONA_API_KEY!, apiUrl: env.DAYTONA_API_URL! };
}

let networked: Promise<EmulatorProcess> | undefined;

/**
 * The connection options of a second emulator whose sandboxes get a network (started on first use):
 * the policy cases need sandboxes with a network to lose. Nothing in them sends traffic anywhere.
 */
export async function networkedConnection(): Promise<EmulatorConnection> {
  networked ??= launchEmulator('daytona', ['--snapshot', `default=${image}`, ...ROOMY]);
  const { env } = await networked;
  return { apiKey: env.DAYTONA_API_KEY!, apiUrl: env.DAYTONA_API_URL! };
}

/** The connection options of the networked emulator, when it was started. */
export async function startedNetworkedConnection(): Promise<EmulatorConnection | undefined> {
  return networked ? networkedConnection().catch(() => undefined) : undefined;
}

/**
 * Stops the emulators this file started. Throws, once they are stopped, when they received requests
 * they do not implement: a backend call the emulator only pretends to answer fails the suite.
 */
export async function stopEmulator(): Promise<void> {
  const running = [emulator, networked, ...limited];
  emulator = undefined;
  networked = undefined;
  limited = [];
  const stopped = await Promise.all(
    running.map(async (launched) => {
      const started = await launched?.catch(() => undefined);
      await started?.stop();
      return started?.unimplemented ?? [];
    }),
  );
  const unimplemented = stopped.flat();
  if (unimplemented.length > 0)
    throw new Error(
      `The Daytona emulator received requests it does not implement: ${unimplemented.join(', ')}`,
    );
}

let limited: Promise<EmulatorProcess>[] = [];

/**
 * The connection options of a new emulator with some of the service's limits changed
 * (`--limit NAME=VALUE`, names as `DAYTONA_LIMITS` of @ws/emulators has them); `stopEmulator` stops it.
 */
export async function limitedConnection(
  limits: Readonly<Record<string, number>>,
): Promise<EmulatorConnection> {
  const args = ['--snapshot', `default=${image}`, '--no-network'];
  for (const [name, value] of Object.entries(limits)) args.push('--limit', `${name}=${value}`);
  const launched = launchEmulator('daytona', args, { trace: process.env.WS_DAYTONA_TRACE !== undefined });
  limited.push(launched);
  const { env } = await launched;
  return { apiKey: env.DAYTONA_API_KEY!, apiUrl: env.DAYTONA_API_URL! };
}

/**
 * An emulator of its own behind a fault proxy (every URL it hands out, each toolbox's too, names the
 * proxy), for the fault cases: the rest of the suite keeps its direct emulator. `stop` deletes the
 * sandboxes of `owner` it holds, then stops it.
 */
export async function emulatorBehindProxy(
  owner: string,
): Promise<{ proxy: FaultProxy; connection: EmulatorConnection; stop(): Promise<void> }> {
  const proxy = await startFaultProxy();
  const port = await freeLoopbackPort();
  proxy.target(port);
  const launched = await launchEmulator('daytona', [
    '--snapshot',
    `default=${image}`,
    '--no-network',
    '--port',
    String(port),
    '--public-port',
    String(proxy.port),
    ...ROOMY,
  ]);
  const connection = { apiKey: launched.env.DAYTONA_API_KEY!, apiUrl: launched.env.DAYTONA_API_URL! };
  return {
    proxy,
    connection,
    async stop() {
      proxy.set('pass');
      await deleteOwnedSandboxes(owner, connection).catch(() => []);
      await launched.stop();
      await proxy.close();
    },
  };
}
