import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { ApiException, CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import {
  K8S_LABELS,
  type K8sEmulator,
  removeK8sEmulatorObjects,
  startK8sEmulator,
} from '../src/k8s/k8s-emulator.js';
import { K8S_LIMITS } from '../src/k8s/limits.js';
import { dockerProblem } from './engine-check.js';

// The API server's limits as the emulator enforces them, and deletions it completes before it closes,
// through the unmodified @kubernetes/client-node 1.4.
const image = 'ws-workspace:bookworm';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[k8s-limits] skipped: ${problem}`);

const docker = new Docker();
const prefix = `k8sl-${randomBytes(4).toString('hex')}`;
const namespace = 'default';
const instances: string[] = [];

async function emulatorWith(limits: Parameters<typeof startK8sEmulator>[0] = {}): Promise<{
  emulator: K8sEmulator;
  core: CoreV1Api;
  instance: string;
}> {
  const instance = `${prefix}-${instances.length}`;
  instances.push(instance);
  const emulator = await startK8sEmulator({ instance, network: false, ...limits });
  const config = new KubeConfig();
  config.loadFromString(emulator.kubeconfig);
  return { emulator, core: config.makeApiClient(CoreV1Api), instance };
}

afterAll(async () => {
  if (problem) return;
  for (const instance of instances) await removeK8sEmulatorObjects(docker, { instance });
});

function pod(name: string, claim?: string): V1Pod {
  return {
    metadata: { name },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image,
          command: ['sleep', 'infinity'],
          ...(claim ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}),
        },
      ],
      ...(claim ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } : {}),
    },
  };
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function rejection(action: () => Promise<unknown>): Promise<ApiException<string>> {
  try {
    await action();
  } catch (error) {
    if (error instanceof ApiException) return error as ApiException<string>;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe.skipIf(problem !== undefined)('k8s emulator limits and completions', () => {
  it('finishes deleting a Pod and its claim it accepted when closed right after', async () => {
    const { emulator, core, instance } = await emulatorWith();
    const name = 'ws-deleted';
    await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    await core.createNamespacedPod({ namespace, body: pod(name, name) });
    await until(
      'running',
      () => core.readNamespacedPod({ namespace, name }),
      (found) => found.status?.phase === 'Running',
    );
    const filters = { label: [`${K8S_LABELS.instance}=${instance}`] };
    expect(await docker.listContainers({ all: true, filters })).toHaveLength(1);
    // The default grace period (30 s): the container is stopped, then removed, after the answer.
    await core.deleteNamespacedPod({ namespace, name });
    await core.deleteNamespacedPersistentVolumeClaim({ namespace, name });
    await emulator.close();
    expect(await docker.listContainers({ all: true, filters })).toEqual([]);
    expect((await docker.listVolumes({ filters })).Volumes ?? []).toEqual([]);
  }, 60_000);

  it('refuses a body over requestBodyBytes with a 413 RequestEntityTooLarge Status', async () => {
    expect(K8S_LIMITS.requestBodyBytes).toBe(3 * 1024 * 1024);
    const { emulator, core } = await emulatorWith({ limits: { requestBodyBytes: 4096 } });
    try {
      const body = pod('ws-large');
      body.metadata!.annotations = { note: 'x'.repeat(8192) };
      const error = await rejection(() => core.createNamespacedPod({ namespace, body }));
      expect(error.code).toBe(413);
      expect(JSON.parse(error.body)).toMatchObject({
        kind: 'Status',
        reason: 'RequestEntityTooLarge',
        message: 'Request entity too large: limit is 4096',
        code: 413,
      });
      expect((await core.listNamespacedPod({ namespace })).items).toEqual([]);
    } finally {
      await emulator.close();
    }
  });

  it('answers 429 with Retry-After: 1 past mutatingRequestsInFlight, and serves once one ends', async () => {
    const { emulator, core } = await emulatorWith({ limits: { mutatingRequestsInFlight: 1 } });
    try {
      // A create whose body is still coming holds the one place.
      const url = new URL(`${emulator.url}/api/v1/namespaces/default/pods`);
      const held = request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${emulator.token}`, 'content-type': 'application/json' },
      });
      const answered = new Promise<number>((resolve, reject) => {
        held.once('response', (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        held.once('error', reject);
      });
      held.write('{"metadata":');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const refused = await fetch(`${emulator.url}/api/v1/namespaces/default/pods`, {
        method: 'POST',
        headers: { authorization: `Bearer ${emulator.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(pod('ws-second')),
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.text()).toBe('Too many requests, please try again later.\n');
      // Reads have their own limit.
      expect((await core.listNamespacedPod({ namespace })).items).toEqual([]);
      held.end(JSON.stringify({ name: 'ws-first' }).concat(`,"spec":${JSON.stringify(pod('x').spec)}}`));
      expect(await answered).toBe(201);
      await core.createNamespacedPod({ namespace, body: pod('ws-second') });
      await core.deleteNamespacedPod({ namespace, name: 'ws-first', gracePeriodSeconds: 0 });
      await core.deleteNamespacedPod({ namespace, name: 'ws-second', gracePeriodSeconds: 0 });
    } finally {
      await emulator.close();
    }
  }, 60_000);

  it('keeps a Pod past podsPerNode Pending and Unschedulable until another goes', async () => {
    const { emulator, core } = await emulatorWith({ limits: { podsPerNode: 1 } });
    try {
      await core.createNamespacedPod({ namespace, body: pod('ws-one') });
      await core.createNamespacedPod({ namespace, body: pod('ws-two') });
      const waiting = await until(
        'unschedulable',
        () => core.readNamespacedPod({ namespace, name: 'ws-two' }),
        (found) => found.status?.conditions?.[0]?.reason === 'Unschedulable',
      );
      expect(waiting.status?.phase).toBe('Pending');
      expect(waiting.spec?.nodeName).toBeUndefined();
      expect(waiting.status?.conditions?.[0]).toMatchObject({ type: 'PodScheduled', status: 'False' });
      expect(waiting.status?.conditions?.[0]?.message).toMatch(/Too many pods/);
      await core.deleteNamespacedPod({ namespace, name: 'ws-one', gracePeriodSeconds: 0 });
      const running = await until(
        'scheduled and running',
        () => core.readNamespacedPod({ namespace, name: 'ws-two' }),
        (found) => found.status?.phase === 'Running',
      );
      expect(running.spec?.nodeName).toBe('ws-emulator');
      await core.deleteNamespacedPod({ namespace, name: 'ws-two', gracePeriodSeconds: 0 });
    } finally {
      await emulator.close();
    }
  }, 60_000);

  it('counts no pod that ended against podsPerNode, as the scheduler does', async () => {
    const { emulator, core } = await emulatorWith({ limits: { podsPerNode: 1 } });
    try {
      const done = pod('ws-done');
      done.spec!.containers[0]!.command = ['true'];
      await core.createNamespacedPod({ namespace, body: done });
      await until(
        'Succeeded',
        () => core.readNamespacedPod({ namespace, name: 'ws-done' }),
        (found) => found.status?.phase === 'Succeeded',
      );
      await core.createNamespacedPod({ namespace, body: pod('ws-next') });
      await until(
        'running beside the ended pod',
        () => core.readNamespacedPod({ namespace, name: 'ws-next' }),
        (found) => found.status?.phase === 'Running',
      );
      for (const name of ['ws-done', 'ws-next'])
        await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
    } finally {
      await emulator.close();
    }
  }, 60_000);

  it('holds names, label values and annotations to nameChars, labelValueChars and annotationsBytes', async () => {
    const { emulator, core } = await emulatorWith({
      limits: { nameChars: 12, labelValueChars: 4, annotationsBytes: 16 },
    });
    try {
      const refused = async (body: V1Pod, pattern: RegExp) => {
        const error = await rejection(() => core.createNamespacedPod({ namespace, body }));
        expect(error.code).toBe(422);
        expect(JSON.parse(error.body)).toMatchObject({
          reason: 'Invalid',
          message: expect.stringMatching(pattern),
        });
      };
      await refused(pod('ws-thirteen-c'), /must be no more than 12 characters/);
      await refused(
        { ...pod('ws-label'), metadata: { name: 'ws-label', labels: { team: 'abcde' } } },
        /no more than 4/,
      );
      await refused(
        { ...pod('ws-note'), metadata: { name: 'ws-note', annotations: { note: 'x'.repeat(13) } } },
        /metadata.annotations: Too long: must have at most 16 bytes/,
      );
      await expect(startK8sEmulator({ limits: { nope: 1 } as never })).rejects.toThrow(/no limit "nope"/);
    } finally {
      await emulator.close();
    }
  });
});
