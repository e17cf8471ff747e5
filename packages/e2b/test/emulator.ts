import { existsSync } from 'node:fs';
import { requireEngine } from '@ws/contract-tests';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { EMULATOR_BIN, type EmulatorProcess, launchEmulator } from '@ws/emulators';

/** The image behind the emulator's `base` template: the one of @ws/docker. */
export const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;

/**
 * Why the emulated suites cannot run here (no engine, image or built emulator), or undefined; under
 * `CI=true` a missing engine throws instead (see `requireEngine`).
 */
export async function emulatorProblem(): Promise<string | undefined> {
  const problem = await dockerProblem(image);
  if (problem) return requireEngine('docker', `the E2B emulator needs Docker: ${problem}`);
  if (!existsSync(EMULATOR_BIN))
    return requireEngine('build', `${EMULATOR_BIN} is missing: build @ws/emulators first (npm test does)`);
  return undefined;
}

export interface EmulatorConnection {
  apiKey: string;
  apiUrl: string;
  sandboxUrl: string;
}

let emulator: Promise<EmulatorProcess> | undefined;

/** The connection options of one emulator per test file, started on first use (`ws-emulator e2b`). */
export async function connection(): Promise<EmulatorConnection> {
  // The suites never use the network from inside a sandbox: sandboxes without one start sooner.
  emulator ??= launchEmulator('e2b', ['--template', `base=${image}`, '--no-network']);
  const { env } = await emulator;
  return { apiKey: env.E2B_API_KEY!, apiUrl: env.E2B_API_URL!, sandboxUrl: env.E2B_SANDBOX_URL! };
}

let networked: Promise<EmulatorProcess> | undefined;

/**
 * The connection options of a second emulator whose sandboxes get a network (started on first use):
 * the policy cases need sandboxes with a network to lose. Nothing in them sends traffic anywhere.
 */
export async function networkedConnection(): Promise<EmulatorConnection> {
  networked ??= launchEmulator('e2b', ['--template', `base=${image}`]);
  const { env } = await networked;
  return { apiKey: env.E2B_API_KEY!, apiUrl: env.E2B_API_URL!, sandboxUrl: env.E2B_SANDBOX_URL! };
}

/** The connection options of the networked emulator, when it was started. */
export async function startedNetworkedConnection(): Promise<EmulatorConnection | undefined> {
  return networked ? networkedConnection().catch(() => undefined) : undefined;
}

const limited: Promise<EmulatorProcess>[] = [];

/**
 * The connection options of a new emulator with some of E2B's limits changed (`--limit NAME=VALUE`,
 * names as in `E2B_LIMITS` of @ws/emulators), stopped by `stopEmulator()`.
 */
export async function limitedConnection(
  limits: Readonly<Record<string, number>>,
): Promise<EmulatorConnection> {
  const launched = launchEmulator('e2b', [
    '--template',
    `base=${image}`,
    '--no-network',
    ...Object.entries(limits).flatMap(([name, value]) => ['--limit', `${name}=${value}`]),
  ]);
  limited.push(launched);
  const { env } = await launched;
  return { apiKey: env.E2B_API_KEY!, apiUrl: env.E2B_API_URL!, sandboxUrl: env.E2B_SANDBOX_URL! };
}

/**
 * Stops the emulators this file started; then throws, listing them, when they received requests they
 * do not implement: a backend call only a real E2B would answer fails the suite.
 */
export async function stopEmulator(): Promise<void> {
  const running = [emulator, networked, ...limited];
  emulator = undefined;
  networked = undefined;
  limited.length = 0;
  const stopped = await Promise.all(
    running.map(async (launched) => {
      const started = await launched?.catch(() => undefined);
      await started?.stop();
      return started;
    }),
  );
  const unimplemented = stopped.flatMap((started) => started?.unimplemented ?? []);
  if (unimplemented.length > 0)
    throw new Error(
      `The E2B emulator received requests it does not implement: ${[...new Set(unimplemented)].join(', ')}`,
    );
}
