import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, Exec, KubeConfig } from '@kubernetes/client-node';
import { type GcReport, generateId } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CONTAINER_NAME,
  gcK8s,
  K8sSandbox,
  K8sWorkspace,
  LABELS,
  objectName,
  workspaceSelector,
} from '../src/index.js';
import { connection, emulatorProblem, image, stopEmulator } from './emulator.js';

/** An attachment record of a process on another machine (machine id, pid, object). */
const REMOTE_RECORD = '0123456789ab-1-remote00';

// The reaper, through the unmodified @kubernetes/client-node against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[k8s gc] skipped: ${problem}`);
const emulated = problem ? undefined : await connection();
// Every Pod of this file carries this owner tag: gc touches nothing else.
const owner = `ws-k8s-gc-${generateId().slice(0, 8)}`;
const namespace = 'default';
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
/** Older than anything here: steers every Pod to `young`. */
const AGES = 10 * 365 * 24 * 3_600_000;

const config = (() => {
  if (!emulated) return undefined;
  const loaded = new KubeConfig();
  loaded.loadFromFile(emulated.kubeconfig);
  return loaded;
})();
const core = config?.makeApiClient(CoreV1Api);

afterAll(async () => {
  // Removes the emulator's containers and volumes, and nothing else.
  await stopEmulator();
}, 120_000);

const options = (workspaceId: string) => ({
  kubeconfig: emulated?.kubeconfig,
  namespace,
  image,
  owner,
  workspaceId,
  gateway: false,
});

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

const reasons = (report: GcReport) =>
  Object.fromEntries(report.kept.map((resource) => [resource.workspaceId, resource.reason]));
const removed = (report: GcReport) => report.removed.map((resource) => resource.workspaceId).sort();

/** Opens `workspaceId` in a node process killed right after: a host that died with it open. */
async function crashWhileOpen(workspaceId: string): Promise<void> {
  if (!existsSync(built)) throw new Error('The package is not built: build it first (npm test does)');
  const script = `const { K8sWorkspace } = await import(${JSON.stringify(built)});
const workspace = new K8sWorkspace(${JSON.stringify(options(workspaceId))});
await workspace.initialize();
process.kill(process.pid, 'SIGKILL');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
  const [, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => resolve([code, signal])),
  );
  expect(signal).toBe('SIGKILL');
}

describe.skipIf(problem !== undefined)('gcK8s on the emulator', () => {
  it('removes orphan Pods older than the age, keeps young and open ones, and a dry run removes nothing', async () => {
    const run = generateId().slice(0, 6);
    const [crashedId, otherId, openId] = ['crashed', 'other', 'open'].map((name) => `${run}-${name}`) as [
      string,
      string,
      string,
    ];
    // Hosts killed while they had the workspaces open: the Pods run on, with their records.
    await crashWhileOpen(crashedId);
    await crashWhileOpen(otherId);
    // Without this project's marks: never listed, never touched.
    const foreignName = `foreign-${run}`;
    await core!.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: foreignName, labels: { [LABELS.owner]: owner, [LABELS.workspace]: 'true' } },
        spec: { containers: [{ name: 'main', image, command: ['sleep', 'infinity'] }] },
      },
    });
    await using inUse = new K8sWorkspace(options(openId));
    await inUse.initialize();

    // The killed hosts were processes of this machine: their records are known dead, the Pods orphans.
    const dead = await gcK8s({
      kubeconfig: emulated!.kubeconfig,
      namespace,
      owner,
      olderThanMs: 0,
      dryRun: true,
    });
    expect(removed(dead)).toEqual([crashedId, otherId].sort());
    expect(reasons(dead)).toEqual({ [openId]: 'in-use' });
    // A fresh record of a process on another machine counts as in use until it goes stale.
    for (const id of [crashedId, otherId]) {
      const pod = new K8sSandbox(new Exec(config!), {
        namespace,
        pod: objectName(id),
        container: CONTAINER_NAME,
      });
      const planted = await pod.exec(['touch', `/tmp/.ws/attached/${REMOTE_RECORD}`], { cwd: '/' });
      expect(planted.exitCode).toBe(0);
    }
    const dry = await gcK8s({
      kubeconfig: emulated!.kubeconfig,
      namespace,
      owner,
      olderThanMs: 0,
      dryRun: true,
    });
    expect(dry.dryRun).toBe(true);
    expect(dry.removed).toEqual([]);
    expect(reasons(dry)).toEqual({ [crashedId]: 'in-use', [otherId]: 'in-use', [openId]: 'in-use' });
    expect(dry.listed.map((resource) => resource.name)).not.toContain(`${namespace}/${foreignName}`);

    // The other host stops touching its records: make them as old as stale ones.
    for (const id of [crashedId, otherId]) {
      const pod = new K8sSandbox(new Exec(config!), {
        namespace,
        pod: objectName(id),
        container: CONTAINER_NAME,
      });
      const aged = await pod.exec(['sh', '-c', 'touch -d @0 /tmp/.ws/attached/*'], { cwd: '/' });
      expect(aged.exitCode).toBe(0);
    }

    const dryAged = await gcK8s({
      kubeconfig: emulated!.kubeconfig,
      namespace,
      owner,
      olderThanMs: 0,
      dryRun: true,
    });
    expect(removed(dryAged)).toEqual([crashedId, otherId].sort());
    expect(reasons(dryAged)).toEqual({ [openId]: 'in-use' });
    expect(await objectsOf(crashedId)).toEqual([
      `pod/${objectName(crashedId)}`,
      `pvc/${objectName(crashedId)}`,
    ]);

    const young = await gcK8s({ kubeconfig: emulated!.kubeconfig, namespace, owner, olderThanMs: AGES });
    expect(young.removed).toEqual([]);
    expect(reasons(young)).toEqual({ [crashedId]: 'young', [otherId]: 'young', [openId]: 'in-use' });

    const report = await gcK8s({ kubeconfig: emulated!.kubeconfig, namespace, owner, olderThanMs: 0 });
    expect(report.dryRun).toBe(false);
    expect(removed(report)).toEqual([crashedId, otherId].sort());
    expect(report.removed.map((resource) => resource.kind)).toEqual(['pod', 'pod']);
    expect(reasons(report)).toEqual({ [openId]: 'in-use' });
    // The PVC stays, as close() leaves it: the id opened again finds its files.
    for (const id of [crashedId, otherId]) expect(await objectsOf(id)).toEqual([`pvc/${objectName(id)}`]);
    expect((await inUse.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
    const foreign = await core!.readNamespacedPod({ namespace, name: foreignName });
    expect(foreign.metadata?.deletionTimestamp).toBeUndefined();
  }, 300_000);
});
