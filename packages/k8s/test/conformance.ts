import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  type ConformanceTarget,
  type CreateOptions,
  cleanUpWithin,
  registerConformanceSuite,
} from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { startFaultProxy } from '@ws/emulators';
import { afterAll } from 'vitest';
import { K8sWorkspace } from '../src/index.js';
import { DEFAULT_K8S_IMAGE } from '../src/k8s-workspace.js';
import { workspaceSelector } from '../src/names.js';
import { K8S_POLICY_SUPPORT } from '../src/pod-policy.js';
import { connection, emulatorProblem, image, networkedConnection, stopEmulator } from './emulator.js';

// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

function coreOf(kubeconfig: string | undefined): CoreV1Api | undefined {
  if (!kubeconfig) return undefined;
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  return config.makeApiClient(CoreV1Api);
}

// What a workspace left running: its Pod (the PVC holds the files, as a closed persistent
// workspace's folder does, and goes with destroy()).
const leftoversOn =
  (kubeconfig: string | undefined, namespace: string) =>
  async (workspaceId: string): Promise<string[]> => {
    const core = coreOf(kubeconfig);
    if (!core) return [];
    const pods = await core.listNamespacedPod({ namespace, labelSelector: workspaceSelector(workspaceId) });
    return pods.items.map((pod) => `pod ${pod.metadata?.name} (${pod.status?.phase})`);
  };

/** Deletes every Pod and PVC of the owner tag `owner` in `namespace`. */
async function removeOwned(kubeconfig: string | undefined, namespace: string, owner: string): Promise<void> {
  const core = coreOf(kubeconfig);
  if (!core) return;
  const labelSelector = `${WS_LABELS.owner}=${owner}`;
  const pods = await core.listNamespacedPod({ namespace, labelSelector });
  await Promise.all(
    pods.items.map((pod) =>
      core
        .deleteNamespacedPod({ namespace, name: pod.metadata?.name ?? '', gracePeriodSeconds: 0 })
        .catch(() => {}),
    ),
  );
  const claims = await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector });
  await Promise.all(
    claims.items.map((claim) =>
      core
        .deleteNamespacedPersistentVolumeClaim({ namespace, name: claim.metadata?.name ?? '' })
        .catch(() => {}),
    ),
  );
}

// Files cross the exec WebSocket of the API server (the emulator's, then Docker's exec), each byte
// through three processes: the large-file cases move 16 MiB files (64 MiB took 20 to 30 s a case);
// the interrupted-write cases size their writes themselves, up to that.
const largeFileBytes = 16 * 1024 * 1024;

/**
 * Registers the conformance suite (one part of it with `shard`) in the calling test file, through the
 * unmodified @kubernetes/client-node against the emulator (each Pod a container, each PVC a named
 * volume): with the gateway, or with `exec only` every command, file and process over its own exec
 * WebSocket. With the gateway it also runs against a real cluster when asked for. The file gets its
 * own emulator and owner tag, both removed after it.
 */
export async function registerK8sConformance(
  variant: 'gateway' | 'exec only',
  shard?: ConformanceTarget['shard'],
): Promise<void> {
  // A live run (npm run test:live) runs the suite against the service alone, under the run's owner tag.
  const live = process.env.WS_LIVE === 'k8s';
  const problem = live ? 'a live run: the emulator is not used' : await emulatorProblem();
  if (problem) console.warn(`[k8s] skipped: ${problem}`);
  const emulated = problem ? undefined : await connection();
  // Every object of the file carries this owner tag, so the file can remove what it left.
  const owner = (live && process.env.WS_LIVE_OWNER) || `ws-test-${generateId().slice(0, 8)}`;

  // Each step bounded: what could not be removed is reported, and the hook never hangs.
  afterAll(async () => {
    await cleanUpWithin([
      ...[owner, `${owner}-2`].map((tag) => ({
        what: `the objects of owner ${tag}`,
        run: () => removeOwned(emulated?.kubeconfig, 'default', tag),
      })),
      // The networked emulator of the policy area, only if that area started it (it takes its Pods along).
      { what: 'the emulator', run: stopEmulator },
    ]);
  }, 120_000);

  // The exec-only variant runs the same suite with no gateway: every command, file and process over
  // its own exec WebSocket (and core's POSIX fallbacks over exec), as on an image without node.
  const bare = variant !== 'gateway';
  const emulatedOptions = () => ({
    kubeconfig: emulated?.kubeconfig,
    namespace: 'default',
    image,
    owner,
    ...(bare ? { gateway: false } : {}),
  });
  await registerConformanceSuite({
    name: bare ? 'k8s (emulator, exec only)' : 'k8s (emulator)',
    shard,
    owners: true,
    largeFileBytes,
    skipReason: () => problem,
    leftovers: leftoversOn(emulated?.kubeconfig, 'default'),
    process: {
      module: built,
      exportName: 'K8sWorkspace',
      options: ({ workspaceId }) => ({ ...emulatedOptions(), workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new K8sWorkspace({ ...options, ...emulatedOptions(), ...(secondOwner ? { owner: `${owner}-2` } : {}) }),
    // The image's `nobody`, by number: a Pod's securityContext takes numeric ids.
    user: { option: '65534:65534', uid: 65534, name: 'nobody' },
    // The packages area with the gateway: npm from the image, apt
    // with a root that keeps its capabilities; no pip (no python3).
    ...(bare
      ? {}
      : {
          packages: {
            npm: true,
            apt: true,
            pip: false,
            aptOptions: { privileges: 'standard' },
          },
        }),
    // What the emulator enforces as a kubelet and a NetworkPolicy plugin would (no process limit: a Pod
    // has none in the API). The area's workspaces get an emulator whose Pods have a network to lose.
    policy: {
      ...K8S_POLICY_SUPPORT,
      create: async (options) =>
        new K8sWorkspace({
          ...options,
          ...emulatedOptions(),
          kubeconfig: (await networkedConnection()).kubeconfig,
        }),
    },
    // An image without node, once: the gateway runs on the host's, uploaded once per Pod.
    ...(bare
      ? {}
      : {
          nodeless: ({ secondOwner: _, ...options }: CreateOptions) =>
            new K8sWorkspace({ ...options, ...emulatedOptions(), image: `${image}-bare` }),
        }),
    // The API server (and every exec connection) behind a proxy the fault cases switch.
    faults: async () => {
      const proxy = await startFaultProxy(Number(new URL(emulated!.apiUrl).port));
      const config = new KubeConfig();
      config.loadFromOptions({
        clusters: [{ name: 'proxied', server: proxy.url, skipTLSVerify: true }],
        users: [{ name: 'test', token: emulated!.token }],
        contexts: [{ name: 'proxied', cluster: 'proxied', user: 'test', namespace: 'default' }],
        currentContext: 'proxied',
      });
      return {
        vendor: 'Kubernetes',
        set: (mode) => proxy.set(mode),
        get answered() {
          return proxy.answered;
        },
        create: ({ secondOwner: _, ...options }) =>
          new K8sWorkspace({ ...options, ...emulatedOptions(), kubeconfig: config, requestTimeoutMs: 2_000 }),
        close: () => proxy.close(),
      };
    },
  });
  if (bare) return;

  // The same suite against a real cluster in a live run (`npm run test:live -- k8s`):
  // WS_K8S_REAL_KUBECONFIG names a kubeconfig file (a plain KUBECONFIG is not enough, so that no run
  // reaches a cluster by accident), WS_K8S_REAL_NAMESPACE the namespace (default `ws-test`),
  // WS_K8S_REAL_IMAGE an image with node 18+.
  const realKubeconfig = live ? process.env.WS_K8S_REAL_KUBECONFIG : undefined;
  const realNamespace = process.env.WS_K8S_REAL_NAMESPACE ?? 'ws-test';
  const realImage = process.env.WS_K8S_REAL_IMAGE ?? DEFAULT_K8S_IMAGE;
  // No policy area here: a NetworkPolicy leaves the Pod its interface (the area's no-network case
  // looks for loopback alone), and whether it holds depends on the cluster's network plugin.
  await registerConformanceSuite({
    name: 'k8s (real cluster)',
    shard,
    owners: true,
    caseTimeoutMs: 180_000,
    skipReason: () =>
      realKubeconfig
        ? undefined
        : 'not a live run: `WS_K8S_REAL_KUBECONFIG=… npm run test:live -- k8s` runs it against that cluster (Pods and PVCs are created in WS_K8S_REAL_NAMESPACE, default ws-test)',
    leftovers: leftoversOn(realKubeconfig, realNamespace),
    process: {
      module: built,
      exportName: 'K8sWorkspace',
      options: ({ workspaceId }) => ({
        kubeconfig: realKubeconfig,
        namespace: realNamespace,
        image: realImage,
        owner,
        workspaceId,
      }),
    },
    create: ({ secondOwner, ...options }) =>
      new K8sWorkspace({
        ...options,
        kubeconfig: realKubeconfig ?? '',
        namespace: realNamespace,
        image: realImage,
        owner: secondOwner ? `${owner}-2` : owner,
      }),
  });

  afterAll(async () => {
    if (realKubeconfig)
      for (const tag of [owner, `${owner}-2`])
        await removeOwned(realKubeconfig, realNamespace, tag).catch(() => {});
  }, 120_000);
}
