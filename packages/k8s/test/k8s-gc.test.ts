import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, Exec, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import {
  crashWhileOpen,
  type ReaperCreateOptions,
  type ReaperProcessTarget,
  registerReaperSuite,
} from '@ws/contract-tests';
import { type GcReport, generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { gcK8s, K8sWorkspace, k8sWorkspaces } from '../src/index.js';
import { K8sSandbox } from '../src/k8s-sandbox.js';
import { MANAGED_BY, MANAGED_BY_LABEL, objectName, workspaceSelector } from '../src/names.js';
import { CONTAINER_NAME } from '../src/pod-spec.js';
import { connection, emulatorProblem, image, stopEmulator } from './emulator.js';

// The reaper, through the unmodified @kubernetes/client-node against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[k8s gc] skipped: ${problem}`);
const emulated = problem ? undefined : await connection();
// Every Pod of the factory case carries this owner tag (the suite and the other cases have their own).
const factoryOwner = `ws-k8s-gc-${generateId().slice(0, 8)}`;
const namespace = 'default';
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

const config = (() => {
  if (!emulated) return undefined;
  const loaded = new KubeConfig();
  loaded.loadFromFile(emulated.kubeconfig);
  return loaded;
})();
const core = config?.makeApiClient(CoreV1Api);
const networking = config?.makeApiClient(NetworkingV1Api);

afterAll(async () => {
  // Removes the emulator's containers and volumes, and nothing else.
  await stopEmulator();
}, 120_000);

const options = ({ workspaceId, owner }: ReaperCreateOptions) => ({
  kubeconfig: emulated?.kubeconfig,
  namespace,
  image,
  owner,
  workspaceId,
  gateway: false,
});
const processTarget: ReaperProcessTarget = { module: built, exportName: 'K8sWorkspace', options };
const gcHere = (gcOptions: Parameters<typeof gcK8s>[0]) =>
  gcK8s({ kubeconfig: emulated!.kubeconfig, namespace, ...gcOptions });

/** The workspace's Pods and PVCs, as `kind/name`. */
async function objectsOf(workspaceId: string): Promise<string[]> {
  const selector = { namespace, labelSelector: workspaceSelector(workspaceId) };
  const pods = await core!.listNamespacedPod(selector);
  const claims = await core!.listNamespacedPersistentVolumeClaim(selector);
  return [
    ...pods.items.map((pod) => `pod/${pod.metadata?.name}`),
    ...claims.items.map((claim) => `pvc/${claim.metadata?.name}`),
  ];
}

/** What the report says of one kind of object (`pod` or `pvc`), by workspace id. */
const reasons = (report: GcReport, kind = 'pod') =>
  Object.fromEntries(
    report.kept
      .filter((resource) => resource.kind === kind)
      .map((resource) => [resource.workspaceId, resource.reason]),
  );
const removed = (report: GcReport, kind = 'pod') =>
  report.removed
    .filter((resource) => resource.kind === kind)
    .map((resource) => resource.workspaceId)
    .sort();

/** How long ago the workspace's PVC was stamped released (its `ws.released` annotation), or undefined. */
async function releasedAgoMs(workspaceId: string): Promise<number | undefined> {
  const claim = await core!.readNamespacedPersistentVolumeClaim({ namespace, name: objectName(workspaceId) });
  const stamp = claim.metadata?.annotations?.[WS_LABELS.released];
  return stamp === undefined ? undefined : Date.now() - Date.parse(stamp);
}

/** Sets the workspace's PVC release stamp back by `ms`, as if it had been closed that long ago. */
async function releasedAgo(workspaceId: string, ms: number): Promise<void> {
  await core!.patchNamespacedPersistentVolumeClaim({
    namespace,
    name: objectName(workspaceId),
    body: [
      {
        op: 'replace',
        path: `/metadata/annotations/${WS_LABELS.released}`,
        value: new Date(Date.now() - ms).toISOString(),
      },
    ],
  });
}

/** Runs a command in the workspace's Pod over exec. */
async function runIn(workspaceId: string, command: string[]): Promise<void> {
  const pod = new K8sSandbox(new Exec(config!), {
    namespace,
    pod: objectName(workspaceId),
    container: CONTAINER_NAME,
  });
  const result = await pod.exec(command, { cwd: '/' });
  expect(result.exitCode, result.stderrText).toBe(0);
}

await registerReaperSuite({
  name: 'k8s (emulator)',
  kind: 'pod',
  skipReason: () => problem,
  create: (create) => new K8sWorkspace(options(create)),
  gc: gcHere,
  // The Pods only: a PVC outlives its Pod on purpose (see the cases below).
  resources: async (workspaceId) => {
    const pods = await core!.listNamespacedPod({ namespace, labelSelector: workspaceSelector(workspaceId) });
    return pods.items
      .filter((pod) => !pod.metadata?.deletionTimestamp)
      .map((pod) => `pod/${pod.metadata?.name} ${pod.status?.phase}`);
  },
  process: processTarget,
  // Without this project's marks: never listed, never touched.
  unmarked: async (tag) => {
    const name = `foreign-${generateId().slice(0, 6)}`;
    await core!.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels: { [WS_LABELS.owner]: tag, [WS_LABELS.workspace]: 'true' } },
        spec: { containers: [{ name: 'main', image, command: ['sleep', 'infinity'] }] },
      },
    });
    return {
      name: `${namespace}/${name}`,
      exists: async () =>
        (await core!.readNamespacedPod({ namespace, name })).metadata?.deletionTimestamp === undefined,
    };
  },
  records: {
    plant: (workspaceId, name) => runIn(workspaceId, ['touch', `/tmp/.ws/attached/${name}`]),
    age: (workspaceId) => runIn(workspaceId, ['sh', '-c', 'touch -d @0 /tmp/.ws/attached/*']),
  },
  // The emulator, stopped after the file, takes every object with it.
  cleanup: async () => {},
});

describe.skipIf(problem !== undefined)('gcK8s on the emulator', () => {
  it("keeps a reaped Pod's PVC, in use in that run, stamped released by the reaper", async () => {
    const run = generateId().slice(0, 6);
    const create = { workspaceId: `${run}-reaped`, owner: `ws-k8s-reaped-${run}` };
    await crashWhileOpen(processTarget, create);
    const report = await gcHere({ owner: create.owner, olderThanMs: 0 });
    expect(report.removed.map((resource) => [resource.kind, resource.workspaceId])).toEqual([
      ['pod', create.workspaceId],
    ]);
    // Listed while its Pod still mounted it: it goes in a later run.
    expect(reasons(report, 'pvc')).toEqual({ [create.workspaceId]: 'in-use' });
    // It stays, stamped released now: the id opened again finds its files.
    expect(await objectsOf(create.workspaceId)).toEqual([`pvc/${objectName(create.workspaceId)}`]);
    expect(await releasedAgoMs(create.workspaceId)).toBeLessThan(120_000);
  }, 300_000);

  it('removes a PVC released longer ago than the age; keeps a young one, one a Pod mounts, and unmarked ones', async () => {
    const run = generateId().slice(0, 6);
    // Its own owner tag: the PVCs the cases above leave are not this test's.
    const claimOwner = `ws-k8s-pvc-${run}`;
    const claimOptions = (workspaceId: string) => options({ workspaceId, owner: claimOwner });
    const [oldId, youngId, liveId] = ['old', 'young', 'live'].map((name) => `${run}-${name}`) as [
      string,
      string,
      string,
    ];
    // Closed workspaces: the Pod goes, the PVC stays, stamped with the time of the close.
    for (const id of [oldId, youngId]) {
      const workspace = new K8sWorkspace(claimOptions(id));
      await workspace.initialize();
      await workspace.getSandbox().writeFile('kept.txt', id);
      await workspace.close();
      expect(await objectsOf(id)).toEqual([`pvc/${objectName(id)}`]);
      expect(await releasedAgoMs(id)).toBeLessThan(120_000);
    }
    await releasedAgo(oldId, 2 * 3_600_000);
    await using live = new K8sWorkspace(claimOptions(liveId));
    await live.initialize();
    // Old, but without this project's marks: one the selector misses, one it finds without an id.
    const unmarked = { [WS_LABELS.owner]: claimOwner, [WS_LABELS.workspace]: 'true' };
    const foreignNames = [`unlabelled-${run}`, `no-id-${run}`];
    for (const [index, name] of foreignNames.entries())
      await core!.createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: {
            name,
            labels: index === 0 ? unmarked : { ...unmarked, [MANAGED_BY_LABEL]: MANAGED_BY },
            annotations: { [WS_LABELS.released]: '2000-01-01T00:00:00.000Z' },
          },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      });
    const gc = (olderThanMs: number, dryRun = false) => gcHere({ owner: claimOwner, olderThanMs, dryRun });

    const dry = await gc(3_600_000, true);
    expect(removed(dry, 'pvc')).toEqual([oldId]);
    expect(reasons(dry, 'pvc')).toEqual({ [youngId]: 'young', [liveId]: 'in-use' });
    expect(reasons(dry)).toEqual({ [liveId]: 'in-use' });
    expect(await objectsOf(oldId)).toEqual([`pvc/${objectName(oldId)}`]);
    for (const name of foreignNames)
      expect(dry.listed.map((resource) => resource.name)).not.toContain(`${namespace}/${name}`);

    const report = await gc(3_600_000);
    expect(removed(report, 'pvc')).toEqual([oldId]);
    expect(report.removed.map((resource) => resource.kind)).toEqual(['pvc']);
    expect(reasons(report, 'pvc')).toEqual({ [youngId]: 'young', [liveId]: 'in-use' });
    expect(await objectsOf(oldId)).toEqual([]);
    expect(await objectsOf(youngId)).toEqual([`pvc/${objectName(youngId)}`]);
    expect((await live.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
    for (const name of foreignNames) {
      const foreign = await core!.readNamespacedPersistentVolumeClaim({ namespace, name });
      expect(foreign.metadata?.deletionTimestamp).toBeUndefined();
    }

    // The young one, opened again, finds its files: it was kept, not emptied.
    await using again = new K8sWorkspace(claimOptions(youngId));
    await again.initialize();
    expect(new TextDecoder().decode(await again.getSandbox().readFile('kept.txt'))).toBe(youngId);
    await again.close();
    await live.close();
    // Closed now, both are idle since this moment: only an age of 0 takes them.
    expect(removed(await gc(3_600_000, true), 'pvc')).toEqual([]);
    const last = await gc(0);
    expect(removed(last, 'pvc')).toEqual([liveId, youngId].sort());
    for (const id of [youngId, liveId]) expect(await objectsOf(id)).toEqual([]);
    for (const name of foreignNames) await core!.deleteNamespacedPersistentVolumeClaim({ namespace, name });
  }, 300_000);

  it("removes a NetworkPolicy with its reaped Pod, and one whose Pod is gone; close deletes a workspace's own", async () => {
    const run = generateId().slice(0, 6);
    const policyOwner = `ws-k8s-netpol-${run}`;
    const policiesOf = async (workspaceId: string) =>
      (
        await networking!.listNamespacedNetworkPolicy({
          namespace,
          labelSelector: workspaceSelector(workspaceId),
        })
      ).items.map((policy) => `networkpolicy/${policy.metadata?.name}`);
    const offline = (workspaceId: string) => ({
      ...options({ workspaceId, owner: policyOwner }),
      network: 'none' as const,
    });

    // Created before the Pod, deleted with it on close.
    const closedId = `${run}-closed`;
    const closed = new K8sWorkspace(offline(closedId));
    await closed.initialize();
    expect(await policiesOf(closedId)).toEqual([`networkpolicy/${objectName(closedId)}`]);
    await closed.close();
    expect(await policiesOf(closedId)).toEqual([]);

    // A crashed host's: it goes with the Pod the reaper removes.
    const crashedId = `${run}-crashed`;
    await crashWhileOpen(
      { ...processTarget, options: (create) => ({ ...options(create), network: 'none' }) },
      { workspaceId: crashedId, owner: policyOwner },
    );
    expect(await policiesOf(crashedId)).toEqual([`networkpolicy/${objectName(crashedId)}`]);
    // One whose Pod was deleted from outside: idle since its creation.
    const orphanId = `${run}-orphan`;
    const orphan = new K8sWorkspace(offline(orphanId));
    await orphan.initialize();
    await core!.deleteNamespacedPod({ namespace, name: objectName(orphanId), gracePeriodSeconds: 0 });
    // Without this project's marks: never touched.
    const foreign = `foreign-${run}`;
    await networking!.createNamespacedNetworkPolicy({
      namespace,
      body: {
        metadata: {
          name: foreign,
          labels: { [WS_LABELS.owner]: policyOwner, [WS_LABELS.workspace]: 'true' },
        },
        spec: { podSelector: {}, policyTypes: ['Egress'] },
      },
    });
    for (let attempt = 0; (await objectsOf(orphanId)).some((item) => item.startsWith('pod/')); attempt++) {
      expect(attempt).toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    const young = await gcHere({ owner: policyOwner, olderThanMs: 3_600_000 });
    expect(reasons(young, 'networkpolicy')).toEqual({ [orphanId]: 'young' });
    const report = await gcHere({ owner: policyOwner, olderThanMs: 0 });
    expect(removed(report)).toEqual([crashedId]);
    expect(removed(report, 'networkpolicy')).toEqual([orphanId]);
    expect(await policiesOf(crashedId)).toEqual([]);
    expect(await policiesOf(orphanId)).toEqual([]);
    expect((await networking!.readNamespacedNetworkPolicy({ namespace, name: foreign })).metadata?.name).toBe(
      foreign,
    );
    await networking!.deleteNamespacedNetworkPolicy({ namespace, name: foreign });
    await expect(networking!.readNamespacedNetworkPolicy({ namespace, name: foreign })).rejects.toThrow();
    await orphan.close().catch(() => {});
  }, 300_000);

  it('k8sWorkspaces: a manager on the factory opens the Pod named after the id, and closeAll deletes it', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-factory`;
    const manager = new WorkspaceManager({
      factory: k8sWorkspaces({
        kubeconfig: emulated!.kubeconfig,
        namespace,
        image,
        owner: factoryOwner,
        gateway: false,
        env: { GREETING: 'hello' },
      }),
    });
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(K8sWorkspace);
    expect((await lease.workspace.getSandbox().exec(['sh', '-c', 'echo "$GREETING"'])).stdoutText).toBe(
      'hello\n',
    );
    expect(await objectsOf(workspaceId)).toEqual([
      `pod/${objectName(workspaceId)}`,
      `pvc/${objectName(workspaceId)}`,
    ]);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    expect(await objectsOf(workspaceId)).toEqual([`pvc/${objectName(workspaceId)}`]);
    await manager[Symbol.asyncDispose]();
  }, 300_000);
});
