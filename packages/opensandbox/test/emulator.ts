import { randomBytes } from 'node:crypto';
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

/** The image the emulated sandboxes run: the one of @ws/docker (node, ripgrep and tar inside). */
export const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;

/**
 * Why the emulated suites cannot run here (no engine, image or built emulator), or undefined; under
 * `CI=true` a missing engine throws instead (see `requireEngine`).
 */
export async function emulatorProblem(): Promise<string | undefined> {
  const problem = await dockerProblem(image);
  if (problem) return requireEngine('docker', `the OpenSandbox emulator needs Docker: ${problem}`);
  if (!existsSync(EMULATOR_BIN))
    return requireEngine('build', `${EMULATOR_BIN} is missing: build @ws/emulators first (npm test does)`);
  return undefined;
}

export interface EmulatorConnection {
  apiKey: string;
  domain: string;
  image: string;
}

let emulator: Promise<EmulatorProcess> | undefined;
let proxy: FaultProxy | undefined;

/** The proxy every connection to the emulator passes (its URLs name the proxy's port), once started. */
export function faultProxy(): FaultProxy {
  if (!proxy) throw new Error('the emulator has not been started');
  return proxy;
}

/** The connection options of one emulator per test file, started on first use (`ws-emulator opensandbox`). */
export async function connection(): Promise<EmulatorConnection> {
  // A key of its own: only this suite's clients are let in.
  // The suites never use the network from inside a sandbox: sandboxes without one start sooner.
  // Every connection, to the lifecycle API and to each execd, passes a proxy the fault cases switch.
  emulator ??= (async () => {
    proxy = await startFaultProxy();
    const port = await freeLoopbackPort();
    proxy.target(port);
    return launchEmulator('opensandbox', [
      '--api-key',
      `key-${randomBytes(8).toString('hex')}`,
      '--no-network',
      '--port',
      String(port),
      '--public-port',
      String(proxy.port),
    ]);
  })();
  const { env } = await emulator;
  return { apiKey: env.OPEN_SANDBOX_API_KEY!, domain: env.OPEN_SANDBOX_DOMAIN!, image };
}

let networked: Promise<EmulatorProcess> | undefined;

/**
 * A second emulator whose sandboxes get the engine's network, started on first use (no fault proxy):
 * the policy cases need sandboxes with a network to lose. Nothing in them connects anywhere.
 */
export async function networkedConnection(): Promise<EmulatorConnection> {
  networked ??= launchEmulator('opensandbox', ['--api-key', `key-${randomBytes(8).toString('hex')}`]);
  const { env } = await networked;
  return { apiKey: env.OPEN_SANDBOX_API_KEY!, domain: env.OPEN_SANDBOX_DOMAIN!, image };
}

/** Emulators a test file started with limits of its own ({@link limitedConnection}). */
const limited: Promise<EmulatorProcess>[] = [];

/**
 * An emulator of its own with `--limit NAME=VALUE` for each entry of `limits` (no fault proxy, no
 * network), stopped by {@link stopEmulator}.
 */
export async function limitedConnection(limits: Record<string, number>): Promise<EmulatorConnection> {
  const started = launchEmulator('opensandbox', [
    '--api-key',
    `key-${randomBytes(8).toString('hex')}`,
    '--no-network',
    ...Object.entries(limits).flatMap(([name, value]) => ['--limit', `${name}=${value}`]),
  ]);
  limited.push(started);
  const { env } = await started;
  return { apiKey: env.OPEN_SANDBOX_API_KEY!, domain: env.OPEN_SANDBOX_DOMAIN!, image };
}

/**
 * Stops the emulators this file started; then throws listing the requests they received and do not
 * implement, if any: a backend call that only an unknown route answered fails the suite.
 */
export async function stopEmulator(): Promise<void> {
  const started = [emulator, networked, ...limited.splice(0)];
  emulator = undefined;
  networked = undefined;
  const unimplemented: string[] = [];
  for (const running of started) {
    const process = await running?.catch(() => undefined);
    await process?.stop();
    unimplemented.push(...(process?.unimplemented ?? []));
  }
  await proxy?.close();
  proxy = undefined;
  if (unimplemented.length > 0)
    throw new Error(
      `the OpenSandbox emulator received requests it does not implement: ${unimplemented.join(', ')}`,
    );
}
