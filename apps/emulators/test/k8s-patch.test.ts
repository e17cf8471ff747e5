import { randomBytes } from 'node:crypto';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type K8sEmulator, removeK8sEmulatorObjects, startK8sEmulator } from '../src/k8s/k8s-emulator.js';
import { dockerProblem } from './engine-check.js';

// PATCH of PersistentVolumeClaims, driven by the unmodified @kubernetes/client-node 1.4 (which sends
// a JSON patch unless told otherwise) and, for what the client cannot send, by fetch.
const problem = requireEngine('docker', await dockerProblem('ws-workspace:bookworm'));
if (problem) console.warn(`[k8s-patch] skipped: ${problem}`);

const instance = `k8sp-${randomBytes(4).toString('hex')}`;
const namespace = 'default';
let emulator: K8sEmulator | undefined;
let core: CoreV1Api;

async function rejection(action: () => Promise<unknown>): Promise<ApiException<string>> {
  try {
    await action();
  } catch (error) {
    if (error instanceof ApiException) return error as ApiException<string>;
    throw error;
  }
  throw new Error('expected a rejection');
}

async function claim(annotations: Record<string, string> = {}): Promise<V1PersistentVolumeClaim> {
  return core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: {
        name: `claim-${randomBytes(3).toString('hex')}`,
        labels: { 'app.kubernetes.io/managed-by': 'ws', keep: 'yes' },
        annotations: { 'ws.workspace.id': 'w1', ...annotations },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
  });
}

/** A PATCH with a chosen Content-Type, on the wire. */
function rawPatch(name: string, contentType: string, body: unknown): Promise<Response> {
  return fetch(`${emulator!.url}/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${emulator!.token}`, 'content-type': contentType },
    body: JSON.stringify(body),
  });
}

describe.skipIf(problem !== undefined)('k8s emulator: PATCH of PersistentVolumeClaims', () => {
  beforeAll(async () => {
    emulator = await startK8sEmulator({ instance });
    const config = new KubeConfig();
    config.loadFromString(emulator.kubeconfig);
    core = config.makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await emulator?.close();
    if (!problem) await removeK8sEmulatorObjects(new Docker(), { instance });
  });

  it('applies the JSON patch client-node sends by default: test, add with ~1 escapes, replace, remove', async () => {
    const created = await claim({ old: 'x' });
    const name = created.metadata!.name!;
    const patched = await core.patchNamespacedPersistentVolumeClaim({
      name,
      namespace,
      body: [
        { op: 'test', path: '/metadata/annotations/ws.workspace.id', value: 'w1' },
        { op: 'test', path: '/metadata/labels/app.kubernetes.io~1managed-by', value: 'ws' },
        { op: 'add', path: '/metadata/annotations/ws.released', value: '2024-01-02T03:04:05.000Z' },
        { op: 'add', path: '/metadata/annotations/example.com~1a~0b', value: 'slash and tilde' },
        { op: 'replace', path: '/metadata/labels/keep', value: 'replaced' },
        { op: 'remove', path: '/metadata/annotations/old' },
      ],
    });
    expect(patched.metadata?.annotations).toEqual({
      'ws.workspace.id': 'w1',
      'ws.released': '2024-01-02T03:04:05.000Z',
      'example.com/a~b': 'slash and tilde',
    });
    expect(patched.metadata?.labels?.keep).toBe('replaced');
    expect(patched.metadata?.uid).toBe(created.metadata?.uid);
    expect(Number(patched.metadata?.resourceVersion)).toBeGreaterThan(
      Number(created.metadata?.resourceVersion),
    );
    // Read and listed as patched.
    const read = await core.readNamespacedPersistentVolumeClaim({ name, namespace });
    expect(read.metadata?.annotations?.['ws.released']).toBe('2024-01-02T03:04:05.000Z');
    const listed = await core.listNamespacedPersistentVolumeClaim({
      namespace,
      labelSelector: 'keep=replaced',
    });
    expect(listed.items.map((item) => item.metadata?.name)).toEqual([name]);
  });

  it('refuses a JSON patch whose test fails (422) or whose path is missing (422), changing nothing', async () => {
    const created = await claim();
    const name = created.metadata!.name!;
    const failed = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim({
        name,
        namespace,
        body: [
          { op: 'add', path: '/metadata/annotations/ws.released', value: 'now' },
          { op: 'test', path: '/metadata/annotations/ws.workspace.id', value: 'someone-else' },
        ],
      }),
    );
    expect(failed.code).toBe(422);
    expect(JSON.parse(failed.body)).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    const missing = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim({
        name,
        namespace,
        body: [{ op: 'remove', path: '/metadata/annotations/absent' }],
      }),
    );
    expect(missing.code).toBe(422);
    const malformed = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim({
        name,
        namespace,
        body: [{ op: 'frobnicate', path: '/x' }],
      }),
    );
    expect(malformed.code).toBe(400);
    const read = await core.readNamespacedPersistentVolumeClaim({ name, namespace });
    expect(read.metadata?.annotations).toEqual({ 'ws.workspace.id': 'w1' });
    expect(read.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it('applies merge and strategic merge patches set through setHeaderOptions, null removing a key', async () => {
    const created = await claim({ old: 'x' });
    const name = created.metadata!.name!;
    const merged = await core.patchNamespacedPersistentVolumeClaim(
      { name, namespace, body: { metadata: { annotations: { 'ws.released': 'merged', old: null } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(merged.metadata?.annotations).toEqual({ 'ws.workspace.id': 'w1', 'ws.released': 'merged' });
    const strategic = await core.patchNamespacedPersistentVolumeClaim(
      { name, namespace, body: { metadata: { labels: { added: 'yes' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    expect(strategic.metadata?.labels).toEqual({
      'app.kubernetes.io/managed-by': 'ws',
      keep: 'yes',
      added: 'yes',
    });
    expect(strategic.metadata?.annotations?.['ws.released']).toBe('merged');
  });

  it('answers 409 for a stale resourceVersion, 422 for a spec change, 415 for apply, 404 for a missing claim', async () => {
    const created = await claim();
    const name = created.metadata!.name!;
    const stale = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim(
        { name, namespace, body: { metadata: { resourceVersion: '1', annotations: { a: 'b' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    expect(stale.code).toBe(409);
    expect(JSON.parse(stale.body)).toMatchObject({ reason: 'Conflict' });
    const current = await core.patchNamespacedPersistentVolumeClaim(
      {
        name,
        namespace,
        body: { metadata: { resourceVersion: created.metadata?.resourceVersion, annotations: { a: 'b' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(current.metadata?.annotations?.a).toBe('b');
    const spec = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim({
        name,
        namespace,
        body: [{ op: 'replace', path: '/spec/accessModes', value: ['ReadWriteMany'] }],
      }),
    );
    expect(spec.code).toBe(422);
    expect(JSON.parse(spec.body).message).toMatch(/spec is immutable/);
    const apply = await rawPatch(name, 'application/apply-patch+yaml', { metadata: {} });
    expect(apply.status).toBe(415);
    expect(await apply.json()).toMatchObject({ kind: 'Status', reason: 'UnsupportedMediaType', code: 415 });
    const wrongType = await rawPatch(name, 'application/json', { metadata: {} });
    expect(wrongType.status).toBe(415);
    const missing = await rejection(() =>
      core.patchNamespacedPersistentVolumeClaim({
        name: 'no-such-claim',
        namespace,
        body: [{ op: 'add', path: '/metadata/annotations/a', value: 'b' }],
      }),
    );
    expect(missing.code).toBe(404);
  });
});
