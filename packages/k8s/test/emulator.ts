import { existsSync } from 'node:fs';
import { requireEngine } from '@ws/contract-tests';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { EMULATOR_BIN, type EmulatorProcess, launchEmulator, removeK8sEmulatorObjects } from '@ws/emulators';

/** The Pod image of the emulated suites: the one of @ws/docker, run as it is. */
export const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;

/**
 * Why the emulated suites cannot run here (no engine, image or built emulator), or undefined; under
 * `CI=true` a missing engine throws instead (see `requireEngine`).
 */
export async function emulatorProblem(): Promise<string | undefined> {
  const problem = await dockerProblem(image);
  if (problem) return requireEngine('docker', `the Kubernetes emulator needs Docker: ${problem}`);
  if (!existsSync(EMULATOR_BIN))
    return requireEngine('build', `${EMULATOR_BIN} is missing: build @ws/emulators first (npm test does)`);
  return undefined;
}

export interface EmulatorConnection {
  /** The kubeconfig file the emulator wrote (removed when it stops). */
  kubeconfig: string;
  apiUrl: string;
  token: string;
  /** The emulator's instance: its containers and volumes carry `ws.k8s.instance=<instance>`. */
  instance: string;
}

let emulator: Promise<EmulatorProcess> | undefined;
let networked: Promise<EmulatorProcess> | undefined;
/** Emulators started with `--limit` pairs, by their arguments. */
const limited = new Map<string, Promise<EmulatorProcess>>();

function connectionOf({ env, instance }: EmulatorProcess): EmulatorConnection {
  return { kubeconfig: env.KUBECONFIG!, apiUrl: env.K8S_API_URL!, token: env.K8S_TOKEN!, instance };
}

/** The connection of one emulator per test file, started on first use (`ws-emulator k8s`). */
export async function connection(): Promise<EmulatorConnection> {
  // The suites never use the network from inside a sandbox: sandboxes without one start sooner.
  emulator ??= launchEmulator('k8s', ['--no-network']);
  return connectionOf(await emulator);
}

/**
 * A second emulator whose Pods get the engine's network, started on first use: the policy cases need
 * sandboxes with a network to lose. Nothing in them connects anywhere.
 */
export async function networkedConnection(): Promise<EmulatorConnection> {
  networked ??= launchEmulator('k8s');
  return connectionOf(await networked);
}

/**
 * An emulator holding the API server to other limits (`{ podsPerNode: 1 }` →
 * `--limit podsPerNode=1`), started on first use; one per set of limits.
 */
export async function limitedConnection(limits: Record<string, number>): Promise<EmulatorConnection> {
  const args = [
    '--no-network',
    ...Object.entries(limits).flatMap(([name, value]) => ['--limit', `${name}=${value}`]),
  ];
  const key = args.join(' ');
  let started = limited.get(key);
  if (!started) {
    started = launchEmulator('k8s', args);
    limited.set(key, started);
  }
  return connectionOf(await started);
}

/**
 * Stops the emulators and removes the containers and volumes of their instances (and nothing else).
 * Throws, once they are stopped, when the backend made requests an emulator does not implement.
 */
export async function stopEmulator(): Promise<void> {
  const started = [emulator, networked, ...limited.values()];
  emulator = undefined;
  networked = undefined;
  limited.clear();
  const unimplemented: string[] = [];
  for (const starting of started) {
    const running = await starting?.catch(() => undefined);
    if (!running) continue;
    await running.stop();
    unimplemented.push(...running.unimplemented);
    await removeK8sEmulatorObjects(undefined, { instance: running.instance }).catch(() => {});
  }
  if (unimplemented.length > 0)
    throw new Error(
      `The Kubernetes emulator was sent requests it does not implement: ${[...new Set(unimplemented)].join(', ')}`,
    );
}
