import { randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import {
  ApiException,
  CoreV1Api,
  Exec,
  KubeConfig,
  type V1NetworkPolicy,
  type V1Pod,
  type V1Status,
  Watch,
} from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  K8S_LABELS,
  type K8sEmulator,
  removeK8sEmulatorObjects,
  startK8sEmulator,
} from '../src/k8s/k8s-emulator.js';
import { dockerProblem } from './engine-check.js';

// Drives the unmodified @kubernetes/client-node 1.4 against the emulator; pods are real containers.
const image = 'ws-workspace:bookworm';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[k8s-client] skipped: ${problem}`);

const docker = new Docker();
const instance = `k8st-${randomBytes(4).toString('hex')}`;
const namespace = 'default';
let emulator: K8sEmulator | undefined;
let core: CoreV1Api;
let exec: Exec;

function clients(kubeconfig: string): { core: CoreV1Api; exec: Exec } {
  const config = new KubeConfig();
  config.loadFromString(kubeconfig);
  return { core: config.makeApiClient(CoreV1Api), exec: new Exec(config) };
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

async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  status: V1Status;
}

/** Runs argv in a pod through client-node's Exec, feeding `input` (then closing stdin) when given. */
function run(pod: string, argv: string[], input?: Buffer, execClient: Exec = exec): Promise<ExecResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const stdin = input === undefined ? null : Readable.from([input]);
  return new Promise((resolve, reject) => {
    execClient
      .exec(namespace, pod, 'main', argv, stdout, stderr, stdin, false, (status) =>
        // The status arrives before the output streams have flushed their last 'data' events.
        setImmediate(() => resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), status })),
      )
      .catch(reject);
  });
}

function podBody(
  name: string,
  options: { image?: string; claim?: string; labels?: Record<string, string> } = {},
): V1Pod {
  return {
    metadata: { name, labels: { app: 'ws-test', ...options.labels } },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: options.image ?? image,
          command: ['sleep', 'infinity'],
          env: [{ name: 'GREETING', value: 'hello pod' }],
          workingDir: '/tmp',
          resources: { limits: { cpu: '500m', memory: '256Mi' } },
          ...(options.claim ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}),
        },
      ],
      ...(options.claim
        ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: options.claim } }] }
        : {}),
    },
  };
}

async function runningPod(name: string, options: Parameters<typeof podBody>[1] = {}): Promise<V1Pod> {
  const created = await core.createNamespacedPod({ namespace, body: podBody(name, options) });
  expect(created.status?.phase).toBe('Pending');
  return until(
    `${name} running`,
    () => core.readNamespacedPod({ namespace, name }),
    (pod) => pod.status?.phase === 'Running',
  );
}

/** The JSON the emulator answers `GET path` with, on the wire. */
async function wire(path: string): Promise<unknown> {
  const response = await fetch(`${emulator!.url}${path}`, {
    headers: { authorization: `Bearer ${emulator!.token}` },
  });
  return response.json();
}

/** `body` with every RFC 3339 time written as `Date.toISOString` does (how the serializer writes them back). */
function sameTimes(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body), (_key, value: unknown) =>
    typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)
      ? new Date(value).toISOString()
      : value,
  );
}

/**
 * Checks `body` against client-node's runtime model `type`: read into the model and written back, it
 * is unchanged, so it holds no field the model lacks and each field has the model's shape.
 */
function roundTrips(body: unknown, type: string): void {
  const model: unknown = ObjectSerializer.deserialize(body, type, '');
  expect(sameTimes(ObjectSerializer.serialize(model, type, '')), type).toEqual(sameTimes(body));
}

async function gone(name: string): Promise<void> {
  await until(
    `${name} gone`,
    () =>
      core.readNamespacedPod({ namespace, name }).then(
        () => 200,
        (error: ApiException<string>) => error.code,
      ),
    (code) => code === 404,
  );
}

describe.skipIf(problem !== undefined)('k8s emulator driven by @kubernetes/client-node 1.4', () => {
  beforeAll(async () => {
    emulator = await startK8sEmulator({ instance });
    ({ core, exec } = clients(emulator.kubeconfig));
  });

  afterAll(async () => {
    await emulator?.close();
    if (!problem) await removeK8sEmulatorObjects(docker, { instance });
  });

  it('writes a 0600 kubeconfig with a bearer token and refuses a wrong token with a 401 Status', async () => {
    const { stat } = await import('node:fs/promises');
    expect((await stat(emulator!.kubeconfigPath)).mode & 0o777).toBe(0o600);
    const wrong = emulator!.kubeconfig.replace(emulator!.token, 'not-the-token');
    const error = await rejection(() => clients(wrong).core.listNamespace());
    expect(error.code).toBe(401);
    // client-node's generated code drops the body of a 401, so the Status is checked on the wire.
    const raw = await fetch(`${emulator!.url}/api/v1/namespaces`, {
      headers: { authorization: 'Bearer nope' },
    });
    expect(raw.status).toBe(401);
    expect(await raw.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Unauthorized',
      code: 401,
    });
    expect((await fetch(`${emulator!.url}/api/v1/namespaces`)).status).toBe(401);
    await expect(run('ws-two', ['true'], undefined, clients(wrong).exec)).rejects.toThrow(/401/);
    const config = new KubeConfig();
    config.loadFromOptions(emulator!.loadKubeConfig());
    const namespaces = await config.makeApiClient(CoreV1Api).listNamespace();
    expect(namespaces.items.map((item) => item.metadata?.name)).toContain('default');
  });

  it('creates, reads, lists and deletes namespaces, and refuses invalid and duplicate names', async () => {
    const name = `ns-${randomBytes(3).toString('hex')}`;
    const created = await core.createNamespace({ body: { metadata: { name } } });
    expect(created.status?.phase).toBe('Active');
    expect((await core.readNamespace({ name })).metadata?.uid).toBe(created.metadata?.uid);
    expect((await rejection(() => core.createNamespace({ body: { metadata: { name } } }))).code).toBe(409);
    const invalid = await rejection(() => core.createNamespace({ body: { metadata: { name: 'Bad_Name' } } }));
    expect(invalid.code).toBe(422);
    expect(JSON.parse(invalid.body)).toMatchObject({ reason: 'Invalid' });
    await core.deleteNamespace({ name });
    await until(
      'namespace gone',
      () =>
        core.readNamespace({ name }).then(
          () => 200,
          (error: ApiException<string>) => error.code,
        ),
      (code) => code === 404,
    );
  });

  it('binds a PVC, runs a pod mounting it, lists by label and keeps files across pod re-creation', async () => {
    const pvc = await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: 'work', labels: { app: 'ws-test' } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    expect(pvc.status?.phase).toBe('Pending');
    const bound = await until(
      'bound',
      () => core.readNamespacedPersistentVolumeClaim({ namespace, name: 'work' }),
      (claim) => claim.status?.phase === 'Bound',
    );
    expect(Number(bound.metadata?.resourceVersion)).toBeGreaterThan(Number(pvc.metadata?.resourceVersion));
    const listedClaims = await core.listNamespacedPersistentVolumeClaim({
      namespace,
      labelSelector: 'app=ws-test',
    });
    expect(listedClaims.items.map((item) => item.metadata?.name)).toEqual(['work']);

    const pod = await runningPod('ws-one', { claim: 'work', labels: { 'ws.id': 'w1', tier: 'a' } });
    expect(pod.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
    expect(pod.status?.containerStatuses?.[0]?.ready).toBe(true);
    const other = await runningPod('ws-two', { labels: { 'ws.id': 'w2' } });
    expect(other.metadata?.uid).not.toBe(pod.metadata?.uid);
    const names = async (labelSelector: string) =>
      (await core.listNamespacedPod({ namespace, labelSelector })).items
        .map((item) => item.metadata?.name)
        .sort();
    expect(await names('ws.id=w1')).toEqual(['ws-one']);
    expect(await names('app=ws-test,tier')).toEqual(['ws-one']);
    expect(await names('ws.id in (w1,w2)')).toEqual(['ws-one', 'ws-two']);
    expect(await names('ws.id notin (w1),app')).toEqual(['ws-two']);
    expect(await names('!tier')).toEqual(['ws-two']);
    const list = await core.listNamespacedPod({ namespace });
    expect(list.kind).toBe('PodList');

    const written = await run('ws-one', ['sh', '-c', 'echo "$GREETING" > /data/note && pwd']);
    expect(written.status.status).toBe('Success');
    expect(written.stdout.toString()).toBe('/tmp\n');
    await core.deleteNamespacedPod({ namespace, name: 'ws-one' });
    await gone('ws-one');
    await runningPod('ws-one', { claim: 'work' });
    expect((await run('ws-one', ['cat', '/data/note'])).stdout.toString()).toBe('hello pod\n');

    // pvc-protection: the claim stays Terminating while a pod mounts it, and its volume goes after.
    const deleted = await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: 'work' });
    expect(deleted.metadata?.deletionTimestamp).toBeDefined();
    expect(
      (await core.readNamespacedPersistentVolumeClaim({ namespace, name: 'work' })).metadata
        ?.deletionTimestamp,
    ).toBeDefined();
    const volumes = async () =>
      (
        await docker.listVolumes({
          filters: { label: [`${K8S_LABELS.instance}=${instance}`, `${K8S_LABELS.name}=work`] },
        })
      ).Volumes ?? [];
    expect(await volumes()).toHaveLength(1);
    const terminating = await core.deleteNamespacedPod({ namespace, name: 'ws-one' });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    await gone('ws-one');
    await until(
      'claim gone',
      () =>
        core.readNamespacedPersistentVolumeClaim({ namespace, name: 'work' }).then(
          () => 200,
          (error: ApiException<string>) => error.code,
        ),
      (code) => code === 404,
    );
    expect(await volumes()).toHaveLength(0);
  }, 60_000);

  it('execs argv without a shell, with stdout and stderr apart and the exit code in the Status', async () => {
    const ok = await run('ws-two', ['sh', '-c', 'echo out; echo err >&2']);
    expect(ok).toMatchObject({ status: { status: 'Success' } });
    expect(ok.stdout.toString()).toBe('out\n');
    expect(ok.stderr.toString()).toBe('err\n');
    const literal = await run('ws-two', ['echo', '$HOME;', '`id`']);
    expect(literal.stdout.toString()).toBe('$HOME; `id`\n');
    const failed = await run('ws-two', ['sh', '-c', 'echo partial; exit 3']);
    expect(failed.stdout.toString()).toBe('partial\n');
    expect(failed.status).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('round-trips binary stdin through cat and closes stdin (v5)', async () => {
    const input = Buffer.concat([Buffer.from([0, 1, 2, 255, 254, 10, 13, 0]), randomBytes(300_000)]);
    const echoed = await run('ws-two', ['cat'], input);
    expect(echoed.status.status).toBe('Success');
    expect(echoed.stdout.equals(input)).toBe(true);
    const counted = await run('ws-two', ['wc', '-c'], input);
    expect(counted.stdout.toString().trim()).toBe(String(input.length));
  });

  it('streams large output with back-pressure', async () => {
    const big = await run('ws-two', ['sh', '-c', 'head -c 8000000 /dev/zero; echo done >&2']);
    expect(big.status.status).toBe('Success');
    expect(big.stdout.length).toBe(8_000_000);
    expect(big.stderr.toString()).toBe('done\n');
  });

  it('speaks v4.channel.k8s.io: channel 3 carries the Status, stdin ends when the client closes', async () => {
    const query = new URLSearchParams([
      ['command', 'sh'],
      ['command', '-c'],
      ['command', 'printf "a\\0b"; printf e >&2; exit 7'],
      ['stdout', 'true'],
      ['stderr', 'true'],
      ['container', 'main'],
    ]);
    const url = `${emulator!.url.replace('http', 'ws')}/api/v1/namespaces/${namespace}/pods/ws-two/exec?${query}`;
    const socket = new WebSocket(url, ['v4.channel.k8s.io'], {
      headers: { authorization: `Bearer ${emulator!.token}` },
    });
    const frames: Buffer[] = [];
    socket.on('message', (data: Buffer) => frames.push(Buffer.from(data)));
    await new Promise((resolve, reject) => {
      socket.once('close', resolve);
      socket.once('error', reject);
    });
    expect(socket.protocol).toBe('v4.channel.k8s.io');
    const channel = (number: number) =>
      Buffer.concat(frames.filter((frame) => frame[0] === number).map((frame) => frame.subarray(1)));
    expect(channel(1)).toEqual(Buffer.from([97, 0, 98]));
    expect(channel(2).toString()).toBe('e');
    expect(JSON.parse(channel(3).toString())).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
    expect(frames.at(-1)?.[0]).toBe(3);
  });

  it('watches pods with client-node Watch: ADDED, MODIFIED to Running, DELETED', async () => {
    const config = new KubeConfig();
    config.loadFromString(emulator!.kubeconfig);
    const events: { type: string; phase?: string }[] = [];
    const request = await new Watch(config).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      { fieldSelector: 'metadata.name=ws-watched' },
      (type: string, pod: V1Pod) => events.push({ type, phase: pod.status?.phase }),
      () => {},
    );
    try {
      await runningPod('ws-watched');
      await core.deleteNamespacedPod({ namespace, name: 'ws-watched', gracePeriodSeconds: 0 });
      await gone('ws-watched');
      await until(
        'DELETED event',
        async () => events,
        (seen) => seen.some((event) => event.type === 'DELETED'),
        5000,
      );
    } finally {
      request.abort();
    }
    expect(events[0]).toEqual({ type: 'ADDED', phase: 'Pending' });
    expect(events).toContainEqual({ type: 'MODIFIED', phase: 'Running' });
    expect(events.at(-1)?.type).toBe('DELETED');
  }, 30_000);

  it('refuses exec into a missing or unknown container, and reports 404, 409 and 422 as Status', async () => {
    await expect(run('no-such-pod', ['true'])).rejects.toThrow();
    const missing = await rejection(() => core.readNamespacedPod({ namespace, name: 'no-such-pod' }));
    expect(missing.code).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      details: { name: 'no-such-pod', kind: 'pods' },
      code: 404,
    });
    const duplicate = await rejection(() => core.createNamespacedPod({ namespace, body: podBody('ws-two') }));
    expect(duplicate.code).toBe(409);
    expect(JSON.parse(duplicate.body)).toMatchObject({ reason: 'AlreadyExists' });
    const hostile = await rejection(() =>
      core.createNamespacedPod({ namespace, body: podBody('../etc;rm') }),
    );
    expect(hostile.code).toBe(422);
    const noNamespace = await rejection(() => core.listNamespacedPod({ namespace: 'nowhere' }));
    expect(noNamespace.code).toBe(404);
  });

  it('reports an image the engine lacks as ErrImagePull, then ImagePullBackOff', async () => {
    const name = 'ws-noimage';
    await core.createNamespacedPod({
      namespace,
      body: podBody(name, { image: `ws-missing-${instance}:none` }),
    });
    const pulled = await until(
      'ErrImagePull',
      () => core.readNamespacedPod({ namespace, name }),
      (pod) => pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImagePull',
      5000,
    );
    expect(pulled.status?.phase).toBe('Pending');
    await until(
      'ImagePullBackOff',
      () => core.readNamespacedPod({ namespace, name }),
      (pod) => pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff',
      5000,
    );
    await expect(run(name, ['true'])).rejects.toThrow(/400/);
    await core.deleteNamespacedPod({ namespace, name });
    await gone(name);
  });

  it('reports the requests it does not implement, and answers them as the API server does', async () => {
    const before = emulator!.unimplemented.length;
    const headers = { authorization: `Bearer ${emulator!.token}` };
    const deployments = await fetch(`${emulator!.url}/apis/apps/v1/namespaces/default/deployments?limit=1`, {
      headers,
    });
    expect(deployments.status).toBe(404);
    expect(await deployments.json()).toMatchObject({ kind: 'Status', reason: 'NotFound', code: 404 });
    const logs = await fetch(`${emulator!.url}/api/v1/namespaces/default/pods/any/log`, { headers });
    expect(logs.status).toBe(405);
    expect(emulator!.unimplemented.slice(before)).toEqual([
      'GET /apis/apps/v1/namespaces/default/deployments',
      'GET /api/v1/namespaces/default/pods/any/log',
    ]);
  });

  it("answers bodies that round-trip through client-node's ObjectSerializer, of every kind", async () => {
    const name = 'ws-serial';
    await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    await runningPod(name, { claim: name });
    const policy = await fetch(
      `${emulator!.url}/apis/networking.k8s.io/v1/namespaces/default/networkpolicies`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${emulator!.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          metadata: { name },
          spec: { podSelector: { matchLabels: { app: 'nothing' } }, policyTypes: ['Egress'] },
        }),
      },
    );
    expect(policy.status).toBe(201);
    roundTrips(await policy.json(), 'V1NetworkPolicy');
    const bodies: [string, string][] = [
      [`/api/v1/namespaces/default/pods/${name}`, 'V1Pod'],
      ['/api/v1/namespaces/default/pods', 'V1PodList'],
      [`/api/v1/namespaces/default/persistentvolumeclaims/${name}`, 'V1PersistentVolumeClaim'],
      ['/api/v1/persistentvolumeclaims', 'V1PersistentVolumeClaimList'],
      ['/api/v1/namespaces/default', 'V1Namespace'],
      ['/api/v1/namespaces', 'V1NamespaceList'],
      [`/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/${name}`, 'V1NetworkPolicy'],
      ['/apis/networking.k8s.io/v1/networkpolicies', 'V1NetworkPolicyList'],
      ['/api/v1/namespaces/default/pods/no-such-pod', 'V1Status'],
      ['/version', 'VersionInfo'],
      ['/api', 'V1APIVersions'],
    ];
    for (const [path, type] of bodies) roundTrips(await wire(path), type);
    const headers = { authorization: `Bearer ${emulator!.token}` };
    const deleted = await fetch(`${emulator!.url}/api/v1/namespaces/default/pods/${name}`, {
      method: 'DELETE',
      headers,
    });
    roundTrips(await deleted.json(), 'V1Pod');
    const claim = await fetch(`${emulator!.url}/api/v1/namespaces/default/persistentvolumeclaims/${name}`, {
      method: 'DELETE',
      headers,
    });
    roundTrips(await claim.json(), 'V1PersistentVolumeClaim');
    const removed = await fetch(
      `${emulator!.url}/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/${name}`,
      { method: 'DELETE', headers },
    );
    roundTrips(await removed.json(), 'V1NetworkPolicy');
    await gone(name);
  }, 60_000);

  it('validates label keys and values and names as the API server does (422 naming the field)', async () => {
    const refused = async (body: V1Pod) => {
      const error = await rejection(() => core.createNamespacedPod({ namespace, body }));
      expect(error.code).toBe(422);
      return JSON.parse(error.body) as V1Status;
    };
    const long = await refused(podBody('ws-label', { labels: { team: 'x'.repeat(64) } }));
    expect(long.details?.causes?.[0]).toMatchObject({ field: 'metadata.labels' });
    expect(long.message).toMatch(/must be no more than 63 characters/);
    const key = await refused(podBody('ws-label', { labels: { 'bad key': 'x' } }));
    expect(key.details?.causes?.[0]?.field).toBe('metadata.labels');
    const value = await refused(podBody('ws-label', { labels: { team: 'a b' } }));
    expect(value.details?.causes?.[0]?.field).toBe('metadata.labels');
    const name = await refused(podBody('a'.repeat(254)));
    expect(name.message).toMatch(/metadata.name: Invalid value: "a+": must be no more than 253 characters/);
    const annotated = podBody('ws-annotated');
    annotated.metadata!.annotations = { note: 'x'.repeat(256 * 1024) };
    const annotations = await refused(annotated);
    expect(annotations.message).toMatch(/metadata.annotations: Too long: must have at most 262144 bytes/);
  });

  it('deletes only the object a delete precondition names, and an ended pod at once', async () => {
    const name = 'ws-precondition';
    const body = podBody(name);
    body.spec!.containers[0]!.command = ['true'];
    const created = await core.createNamespacedPod({ namespace, body });
    const stale = await rejection(() =>
      core.deleteNamespacedPod({ namespace, name, body: { preconditions: { uid: 'not-its-uid' } } }),
    );
    expect(stale.code).toBe(409);
    expect(JSON.parse(stale.body)).toMatchObject({
      reason: 'Conflict',
      message: expect.stringMatching(/Precondition failed: UID in precondition: not-its-uid/),
    });
    const ended = await until(
      'Succeeded',
      () => core.readNamespacedPod({ namespace, name }),
      (pod) => pod.status?.phase === 'Succeeded',
    );
    expect(ended.metadata?.uid).toBe(created.metadata?.uid);
    const deleted = await core.deleteNamespacedPod({
      namespace,
      name,
      body: { preconditions: { uid: created.metadata?.uid } },
    });
    // The pod strategy gives a pod that ended no grace period, whatever its spec says.
    expect(deleted.metadata?.deletionGracePeriodSeconds).toBe(0);
    await gone(name);
    const claim = await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    const staleClaim = await rejection(() =>
      core.deleteNamespacedPersistentVolumeClaim({
        namespace,
        name,
        body: { preconditions: { resourceVersion: '1' } },
      }),
    );
    expect(staleClaim.code).toBe(409);
    await core.deleteNamespacedPersistentVolumeClaim({
      namespace,
      name,
      body: { preconditions: { uid: claim.metadata?.uid } },
    });
  });

  it('defaults a NetworkPolicy to Ingress only when its egress rules are an empty list', async () => {
    const path = `${emulator!.url}/apis/networking.k8s.io/v1/namespaces/default/networkpolicies`;
    const headers = { authorization: `Bearer ${emulator!.token}`, 'content-type': 'application/json' };
    const created = await fetch(path, {
      method: 'POST',
      headers,
      body: JSON.stringify({ metadata: { name: 'ws-empty-egress' }, spec: { podSelector: {}, egress: [] } }),
    });
    // Empty rule lists are not written back (the API server's JSON omits empty lists).
    expect(((await created.json()) as V1NetworkPolicy).spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress'],
    });
    await fetch(`${path}/ws-empty-egress`, { method: 'DELETE', headers });
  });

  it('finds its pods again after a restart with the same instance', async () => {
    const before = await core.readNamespacedPod({ namespace, name: 'ws-two' });
    await emulator!.close();
    emulator = await startK8sEmulator({ instance });
    ({ core, exec } = clients(emulator.kubeconfig));
    const after = await core.readNamespacedPod({ namespace, name: 'ws-two' });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.status?.phase).toBe('Running');
    expect((await run('ws-two', ['sh', '-c', 'echo again'])).stdout.toString()).toBe('again\n');
    // Another instance does not see them.
    const stranger = await startK8sEmulator({ instance: `${instance}-other` });
    try {
      const { core: strangerCore } = clients(stranger.kubeconfig);
      expect((await strangerCore.listNamespacedPod({ namespace })).items).toHaveLength(0);
    } finally {
      await stranger.close();
    }
    await core.deleteNamespacedPod({ namespace, name: 'ws-two', gracePeriodSeconds: 0 });
    await gone('ws-two');
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${K8S_LABELS.instance}=${instance}`] },
    });
    expect(left).toHaveLength(0);
  }, 30_000);
});
