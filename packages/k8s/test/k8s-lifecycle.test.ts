import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { startFaultProxy } from '@ws/emulators';
import { afterAll, describe, expect, it } from 'vitest';
import { gcK8s, K8sWorkspace } from '../src/index.js';
import { objectName, workspaceSelector } from '../src/names.js';
import { connection, emulatorProblem, image, stopEmulator } from './emulator.js';

// What the Kubernetes backend promises beyond the conformance suite, through the unmodified
// @kubernetes/client-node against the emulator (Pods as containers, PVCs as volumes).
const problem = await emulatorProblem();
if (problem) console.warn(`[k8s lifecycle] skipped: ${problem}`);
const emulated = problem ? undefined : await connection();
const owner = `ws-k8s-test-${generateId().slice(0, 8)}`;
const namespace = 'default';
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

const core = (() => {
  if (!emulated) return undefined;
  const config = new KubeConfig();
  config.loadFromFile(emulated.kubeconfig);
  return config.makeApiClient(CoreV1Api);
})();

afterAll(async () => {
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string, options: Record<string, unknown> = {}) =>
  new K8sWorkspace({ kubeconfig: emulated?.kubeconfig, namespace, image, owner, workspaceId, ...options });

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

async function podUid(name: string): Promise<string | undefined> {
  return core!.readNamespacedPod({ name, namespace }).then(
    (pod) => pod.metadata?.uid,
    () => undefined,
  );
}

describe.skipIf(problem !== undefined)('K8sWorkspace on the emulator', () => {
  it('close() deletes the Pod and keeps the PVC; the next object re-creates the Pod with the files', async () => {
    const workspaceId = generateId();
    const bytes = randomBytes(1024 * 1024);
    const first = open(workspaceId);
    await first.initialize();
    expect(first.createdPod).toBe(true);
    await first.getSandbox().writeFile('kept.bin', bytes);
    const name = objectName(workspaceId);
    expect(first.podName).toBe(name);
    const pod = await core!.readNamespacedPod({ name, namespace });
    expect(pod.metadata?.labels?.[WS_LABELS.owner]).toBe(owner);
    expect(pod.metadata?.labels?.[WS_LABELS.id]).toBe(workspaceId);
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    await first.close();
    expect(await objectsOf(workspaceId)).toEqual([`pvc/${name}`]);
    const second = open(workspaceId);
    await second.initialize();
    expect(Buffer.from(await second.getSandbox().readFile('kept.bin')).equals(bytes)).toBe(true);
    await second.destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 90_000);

  it('keeps the NetworkPolicy of a shared Pod when a second object asks for the same network', async () => {
    const workspaceId = generateId();
    const config = new KubeConfig();
    config.loadFromFile(emulated!.kubeconfig);
    const networking = config.makeApiClient(NetworkingV1Api);
    const name = objectName(workspaceId);
    const first = open(workspaceId, { network: 'none' });
    await first.initialize();
    const before = (await networking.readNamespacedNetworkPolicy({ name, namespace })).metadata?.uid;
    expect(before).toBeDefined();
    // The spec read back (keys in the client's order, empty lists left out) is the one asked for.
    const second = open(workspaceId, { network: 'none' });
    await second.initialize();
    expect((await networking.readNamespacedNetworkPolicy({ name, namespace })).metadata?.uid).toBe(before);
    await second.close();
    await first.destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 90_000);

  it('re-creates a Pod deleted from outside on the next initialize(), with the PVC files intact', async () => {
    const workspaceId = generateId();
    const workspace = open(workspaceId);
    await workspace.initialize();
    await workspace.getSandbox().writeFile('notes/kept.txt', 'survives the Pod');
    const name = objectName(workspaceId);
    const before = await podUid(name);
    await core!.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    for (let waited = 0; (await podUid(name)) !== undefined && waited < 100; waited++)
      await new Promise((resolve) => setTimeout(resolve, 200));
    const lost = await workspace
      .getSandbox()
      .exec(['true'])
      .catch((error: unknown) => error);
    expect(isWsError(lost), String(lost)).toBe(true);
    await workspace.initialize();
    const after = await podUid(name);
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    const text = new TextDecoder().decode(await workspace.getSandbox().readFile('notes/kept.txt'));
    expect(text).toBe('survives the Pod');
    expect((await workspace.getSandbox().exec(['sh', '-c', 'echo again'])).stdoutText).toBe('again\n');
    await workspace.destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('re-attaches to the same running Pod after its host process was killed', async () => {
    const workspaceId = generateId();
    const script = `const { K8sWorkspace } = await import(${JSON.stringify(built)});
const workspace = new K8sWorkspace(${JSON.stringify({ kubeconfig: emulated?.kubeconfig, namespace, image, owner, workspaceId })});
await workspace.initialize();
await workspace.getSandbox().writeFile('from-killed.txt', 'still here');
console.log('open');
setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const opened = await new Promise<boolean>((resolve) => {
      child.stdout.on('data', (chunk) => {
        if (String(chunk).includes('open')) resolve(true);
      });
      child.once('exit', () => resolve(false));
    });
    expect(opened, stderr).toBe(true);
    const uid = await podUid(objectName(workspaceId));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const next = open(workspaceId);
    await next.initialize();
    expect(next.createdPod).toBe(false);
    expect(await podUid(objectName(workspaceId))).toBe(uid);
    expect(new TextDecoder().decode(await next.getSandbox().readFile('from-killed.txt'))).toBe('still here');
    // The killed host's record is of a dead process of this machine: this close deletes the Pod.
    await next.close();
    expect(await objectsOf(workspaceId)).toEqual([`pvc/${objectName(workspaceId)}`]);
    await open(workspaceId).destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('keeps the Pod while a second object on the id is open, and deletes it with the last', async () => {
    const workspaceId = generateId();
    const first = open(workspaceId);
    const second = open(workspaceId);
    await first.initialize();
    await second.initialize();
    expect(second.createdPod).toBe(false);
    await first.close();
    expect((await second.getSandbox().exec(['echo', 'still'])).stdoutText).toBe('still\n');
    await second.close();
    expect(await objectsOf(workspaceId)).toEqual([`pvc/${objectName(workspaceId)}`]);
    await open(workspaceId).destroy();
  }, 90_000);

  it('fails fast with the Pod reason on an image that cannot be pulled, and leaves no Pod', async () => {
    const workspaceId = generateId();
    const workspace = open(workspaceId, { image: `ws-no-such-image-${randomBytes(4).toString('hex')}:1` });
    const started = Date.now();
    const error = await workspace.initialize().catch((failure: unknown) => failure);
    const took = Date.now() - started;
    expect(isWsError(error, 'BACKEND_ERROR'), String(error)).toBe(true);
    const reason = (error as { details?: { reason?: string } }).details?.reason;
    expect(['ErrImagePull', 'ImagePullBackOff']).toContain(reason);
    expect(String((error as Error).message)).toContain(reason);
    // Far below the 120 s it would wait for a Pod that is only slow.
    expect(took).toBeLessThan(20_000);
    expect(await objectsOf(workspaceId)).toEqual([`pvc/${objectName(workspaceId)}`]);
    await open(workspaceId).destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 60_000);

  it('destroy() leaves nothing, and never touches a Pod or PVC that is not its own', async () => {
    const workspaceId = generateId();
    const name = objectName(workspaceId);
    // A Pod of the same name that no workspace created.
    await core!.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels: { app: 'someone-else' } },
        spec: { containers: [{ name: 'main', image, command: ['sleep', '600'] }] },
      },
    });
    const refused = await open(workspaceId)
      .initialize()
      .catch((error: unknown) => error);
    expect(isWsError(refused, 'CONFLICT'), String(refused)).toBe(true);
    await open(workspaceId).destroy();
    const foreign = await core!.readNamespacedPod({ name, namespace });
    expect(foreign.metadata?.deletionTimestamp).toBeUndefined();
    await core!.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    for (let waited = 0; (await podUid(name)) !== undefined && waited < 100; waited++)
      await new Promise((resolve) => setTimeout(resolve, 200));
    // The workspace's own PVC (made before the Pod was refused) goes with destroy().
    const workspace = open(workspaceId);
    await workspace.initialize();
    await workspace.getSandbox().writeFile('doomed.txt', 'x');
    await workspace.destroy();
    expect(await objectsOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('runs without the gateway over exec alone: streams apart, stdin, env, cwd, bytes, timeouts', async () => {
    const workspace = open(generateId(), { gateway: false, env: { FROM_POD: 'pod-env' } });
    await workspace.initialize();
    const sandbox = workspace.getSandbox();
    const result = await sandbox.exec(['sh', '-c', 'cat; echo err >&2; exit 3'], { stdin: 'piped' });
    expect([result.exitCode, result.stdoutText, result.stderrText]).toEqual([3, 'piped', 'err\n']);
    const env = await sandbox.exec(['sh', '-c', 'echo "$FROM_POD $MINE"; pwd'], {
      env: { MINE: 'it\'s "quoted" $HOME' },
      cwd: '/tmp',
    });
    expect(env.stdoutText).toBe(`pod-env it's "quoted" $HOME\n/tmp\n`);
    const missing = await sandbox.exec(['true'], { cwd: 'no/such/dir' }).catch((error: unknown) => error);
    expect(isWsError(missing, 'NOT_FOUND')).toBe(true);
    const all = new Uint8Array(256 * 64).map((_, index) => index % 256);
    await sandbox.writeFile('all.bin', all);
    expect(Buffer.from(await sandbox.readFile('all.bin')).equals(Buffer.from(all))).toBe(true);
    const binary = await sandbox.exec(['cat', 'all.bin']);
    expect(Buffer.from(binary.stdout).equals(Buffer.from(all))).toBe(true);
    const absent = await sandbox.readFile('absent.txt').catch((error: unknown) => error);
    expect(isWsError(absent, 'NOT_FOUND')).toBe(true);
    const started = Date.now();
    const timed = await sandbox.exec(['sh', '-c', 'sleep 30 & sleep 30; echo never'], { timeoutMs: 500 });
    expect([timed.timedOut, timed.exitCode, timed.stdoutText]).toEqual([true, -1, '']);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The timeout killed the whole group, the background sleep too.
    const left = await sandbox.exec(['sh', '-c', 'ps -eo args 2>/dev/null | grep -c "^sleep 30" || true']);
    expect(left.stdoutText.trim()).toBe('0');
    const process = await sandbox.spawn(['cat']);
    await process.write('echoed');
    await process.closeStdin();
    let echoed = '';
    for await (const chunk of process.stdout) echoed += new TextDecoder().decode(chunk);
    expect(echoed).toBe('echoed');
    expect((await process.exited).exitCode).toBe(0);
    await workspace.destroy();
  }, 90_000);

  it('refuses bad options with typed errors, and a kubeconfig that does not load', async () => {
    expect(() => new K8sWorkspace({ nope: 1 } as never)).toThrow(/nope/);
    expect(() => new K8sWorkspace({ storageSize: 'lots' })).toThrow(/storageSize/);
    expect(() => new K8sWorkspace({ labels: { 'ws.owner': 'x' } })).toThrow(/workspace's own/);
    expect(() => new K8sWorkspace({ namespace: 'Not_Valid' })).toThrow(/namespace/);
    expect(() => new K8sWorkspace({ env: { 'A-B': '1' } })).toThrow(/environment variable/);
    expect(() => new K8sWorkspace({ startTimeoutMs: 5 })).toThrow(/startTimeoutMs must be/);
    // One meaning per name: `timeoutMs` is a sandbox's lifetime elsewhere, and a Pod has none.
    expect(() => new K8sWorkspace({ timeoutMs: 120_000 } as never)).toThrow(
      /no option "timeoutMs"; a Pod has no time limit/,
    );
    await expect(gcK8s({ olderThanMs: 0, timeoutMs: 5 } as never)).rejects.toThrow(/use "startTimeoutMs"/);
    const broken = new K8sWorkspace({ kubeconfig: '/no/such/kubeconfig', workspaceId: generateId() });
    const error = await broken.initialize().catch((failure: unknown) => failure);
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
  });

  it('ends every call within its time limits when the API connection hangs, and works again once it clears', async () => {
    // A proxy between the client and the API server that stops forwarding without closing.
    const proxy = await startFaultProxy(Number(new URL(emulated!.apiUrl).port));
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'proxied', server: proxy.url, skipTLSVerify: true }],
      users: [{ name: 'test', token: emulated!.token }],
      contexts: [{ name: 'proxied', cluster: 'proxied', user: 'test', namespace }],
      currentContext: 'proxied',
    });
    const workspaceId = generateId();
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        () => 'resolved',
        (error: unknown) => (isWsError(error) ? error.code : `untyped: ${String(error)}`),
      );
    for (const gateway of [true, false]) {
      const workspace = open(workspaceId, { kubeconfig: config, requestTimeoutMs: 2_000, gateway });
      try {
        await workspace.initialize();
        const sandbox = workspace.getSandbox();
        await sandbox.writeFile('before.txt', 'kept');
        proxy.set('hang');
        // Each call ends by itself (the case's own time limit is the only other bound), typed.
        expect(await outcome(sandbox.exec(['sh', '-c', 'sleep 1; echo done'], { timeoutMs: 3_000 }))).toBe(
          'BACKEND_UNAVAILABLE',
        );
        expect(
          await outcome(open(generateId(), { kubeconfig: config, requestTimeoutMs: 2_000 }).initialize()),
        ).toBe('BACKEND_UNAVAILABLE');
        proxy.set('pass');
        // The same object works again, or says it cannot: then a new one on the id works.
        const again = await outcome(sandbox.exec(['cat', 'before.txt'], { timeoutMs: 10_000 }));
        expect(['resolved', 'BACKEND_UNAVAILABLE']).toContain(again);
        let working = workspace;
        if (again !== 'resolved') {
          await workspace.close().catch(() => {});
          working = open(workspaceId, { kubeconfig: config, requestTimeoutMs: 2_000, gateway });
          await working.initialize();
        }
        try {
          const read = await working.getSandbox().exec(['cat', 'before.txt'], { timeoutMs: 10_000 });
          expect(read.stdoutText).toBe('kept');
        } finally {
          await working.close();
        }
      } finally {
        proxy.set('pass');
        await workspace.close().catch(() => {});
      }
    }
    await open(workspaceId).destroy();
    await proxy.close();
  }, 240_000);
});
