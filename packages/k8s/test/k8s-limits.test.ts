import { request } from 'node:http';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { generateId, isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { K8sWorkspace } from '../src/index.js';
import { objectName, workspaceSelector } from '../src/names.js';
import {
  connection,
  type EmulatorConnection,
  emulatorProblem,
  image,
  limitedConnection,
  stopEmulator,
} from './emulator.js';

// How the backend meets the API server's and the node's limits, against emulators started with
// `ws-emulator k8s --limit NAME=VALUE` (the unmodified @kubernetes/client-node on the wire).
const problem = await emulatorProblem();
if (problem) console.warn(`[k8s limits] skipped: ${problem}`);
const owner = `ws-lim-${generateId().slice(0, 8)}`;
const namespace = 'default';

afterAll(async () => {
  await stopEmulator();
}, 120_000);

const open = (emulated: EmulatorConnection, workspaceId: string, options: Record<string, unknown> = {}) =>
  new K8sWorkspace({ kubeconfig: emulated.kubeconfig, namespace, image, owner, workspaceId, ...options });

function coreOf(emulated: EmulatorConnection): CoreV1Api {
  const config = new KubeConfig();
  config.loadFromFile(emulated.kubeconfig);
  return config.makeApiClient(CoreV1Api);
}

async function failure(action: () => Promise<unknown>): Promise<unknown> {
  return action().then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe.skipIf(problem !== undefined)('K8sWorkspace within the API server limits', () => {
  it('podsPerNode: a workspace past a full node fails with LIMIT_EXCEEDED and leaves no Pod', async () => {
    const emulated = await limitedConnection({ podsPerNode: 1 });
    const first = open(emulated, generateId());
    await first.initialize();
    const secondId = generateId();
    const error = await failure(() => open(emulated, secondId).initialize());
    expect(isWsError(error, 'LIMIT_EXCEEDED'), String(error)).toBe(true);
    expect((error as { details?: unknown }).details).toMatchObject({ reason: 'Unschedulable' });
    const pods = await coreOf(emulated).listNamespacedPod({
      namespace,
      labelSelector: workspaceSelector(secondId),
    });
    expect(pods.items).toEqual([]);
    await first.destroy();
  }, 120_000);

  it('requestBodyBytes: a Pod manifest over the body limit is LIMIT_EXCEEDED (413)', async () => {
    const emulated = await limitedConnection({ requestBodyBytes: 8192 });
    const workspaceId = generateId();
    const error = await failure(() =>
      open(emulated, workspaceId, { env: { BIG: 'x'.repeat(16_384) } }).initialize(),
    );
    expect(isWsError(error, 'LIMIT_EXCEEDED'), String(error)).toBe(true);
    expect((error as { details?: unknown }).details).toMatchObject({
      httpCode: 413,
      reason: 'RequestEntityTooLarge',
    });
    // Under the limit, the same workspace starts.
    const workspace = open(emulated, workspaceId, { env: { SMALL: 'x' } });
    await workspace.initialize();
    expect((await workspace.getSandbox().exec(['sh', '-c', 'echo $SMALL'])).stdoutText).toBe('x\n');
    await workspace.destroy();
  }, 120_000);

  it('mutatingRequestsInFlight: a create refused with 429 is sent again after Retry-After', async () => {
    const emulated = await limitedConnection({ mutatingRequestsInFlight: 1 });
    // A create whose body is still coming holds the one place for 1.5 s: every change meanwhile is a 429.
    const held = request(new URL(`${emulated.apiUrl}/api/v1/namespaces/default/pods`), {
      method: 'POST',
      headers: { authorization: `Bearer ${emulated.token}`, 'content-type': 'application/json' },
    });
    held.on('error', () => {});
    held.on('response', (response) => response.resume());
    held.write('{');
    const release = setTimeout(() => held.end('}'), 1500);
    const began = Date.now();
    const workspace = open(emulated, generateId());
    try {
      await workspace.initialize();
      expect(Date.now() - began).toBeGreaterThanOrEqual(1000);
      expect((await workspace.getSandbox().exec(['true'])).exitCode).toBe(0);
    } finally {
      clearTimeout(release);
      held.end();
      await workspace.destroy();
    }
  }, 120_000);

  it('nameChars and labelValueChars: a name or label past them is INVALID_ARGUMENT (422)', async () => {
    const emulated = await limitedConnection({ nameChars: 30, labelValueChars: 40 });
    const longId = `a-workspace-id-longer-than-thirty-${generateId().slice(0, 6)}`;
    expect(objectName(longId).length).toBeGreaterThan(30);
    const named = await failure(() => open(emulated, longId).initialize());
    expect(isWsError(named, 'INVALID_ARGUMENT'), String(named)).toBe(true);
    expect((named as { details?: unknown }).details).toMatchObject({ httpCode: 422 });
    const labelled = await failure(() =>
      open(emulated, generateId().slice(0, 12), { labels: { team: 'x'.repeat(45) } }).initialize(),
    );
    expect(isWsError(labelled, 'INVALID_ARGUMENT'), String(labelled)).toBe(true);
    expect(String((labelled as Error).message)).toMatch(/must be no more than 40 characters/);
    // Past the real limit (63), the workspace refuses the label before any request.
    const emulatedDefault = await connection();
    expect(() => open(emulatedDefault, generateId(), { labels: { team: 'x'.repeat(64) } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  }, 120_000);
});
