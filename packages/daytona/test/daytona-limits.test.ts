import { generateId, isWsError, type WsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DaytonaWorkspace, deleteOwnedSandboxes } from '../src/index.js';
import {
  type EmulatorConnection,
  emulatorProblem,
  image,
  limitedConnection,
  stopEmulator,
} from './emulator.js';

// The service's limits (ws-emulator --limit, with Daytona's own answers: 400 for a quota, 429 with
// Retry-After-<throttler> for a rate limit), met through the backend: a quota is a typed error, a
// rate limit is waited out and the call sent again.
const problem = await emulatorProblem();
if (problem) console.warn(`[daytona limits] skipped: ${problem}`);
const owner = `ws-daytona-limits-${generateId().slice(0, 8)}`;
const used: EmulatorConnection[] = [];

async function emulated(limits: Record<string, number>): Promise<EmulatorConnection> {
  const connection = await limitedConnection(limits);
  used.push(connection);
  return connection;
}

afterAll(async () => {
  for (const connection of used) await deleteOwnedSandboxes(owner, connection).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (connection: EmulatorConnection, options: Record<string, unknown> = {}) =>
  new DaytonaWorkspace({ ...connection, owner, workspaceId: generateId(), gateway: false, ...options });

async function failure(action: () => Promise<unknown>): Promise<WsError> {
  const error = await action().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isWsError(error)) throw new Error(`expected a WsError, not ${String(error)}`);
  return error;
}

describe.skipIf(problem !== undefined)('DaytonaWorkspace within the service limits', () => {
  it('refuses resources past the per-sandbox quotas with LIMIT_EXCEEDED (cpuPerSandbox, memoryPerSandboxGiB, diskPerSandboxGiB)', async () => {
    const connection = await emulated({ cpuPerSandbox: 1, memoryPerSandboxGiB: 1, diskPerSandboxGiB: 2 });
    for (const [resources, resource, limit] of [
      [{ cpu: 2 }, 'cpu', 1],
      [{ memory: 2 }, 'memory', 1],
      [{ disk: 3 }, 'disk', 2],
    ] as const) {
      const error = await failure(() => open(connection, { image, resources }).initialize());
      expect(error.code, error.message).toBe('LIMIT_EXCEEDED');
      expect(error.details).toMatchObject({ quota: 'per-sandbox', resource, limit });
    }
  });

  it('refuses a sandbox past the total CPU quota, and opens it once another stopped (totalCpu)', async () => {
    const connection = await emulated({ totalCpu: 1 });
    const first = open(connection);
    await first.initialize();
    const second = open(connection);
    const error = await failure(() => second.initialize());
    expect(error.code, error.message).toBe('LIMIT_EXCEEDED');
    expect(error.details).toMatchObject({ quota: 'total', resource: 'cpu', limit: 1 });
    // A stopped sandbox holds no CPU.
    await first.close();
    await second.initialize();
    expect((await second.getSandbox().exec(['echo', 'room'])).stdoutText).toBe('room\n');
    await second.destroy();
    await first.destroy();
  }, 90_000);

  it('counts the memory of running and the disk of stopped sandboxes (totalMemoryGiB, totalDiskGiB)', async () => {
    const memory = await emulated({ totalMemoryGiB: 1 });
    const error = await failure(() => open(memory, { image, resources: { memory: 2 } }).initialize());
    expect(error.details).toMatchObject({ quota: 'total', resource: 'memory', limit: 1 });
    const disk = await emulated({ totalDiskGiB: 3 });
    const first = open(disk);
    await first.initialize();
    await first.close();
    // Stopped, it still holds its 3 GiB of disk.
    const refused = await failure(() => open(disk).initialize());
    expect(refused.details).toMatchObject({ quota: 'total', resource: 'disk', limit: 3 });
    await first.destroy();
  }, 90_000);

  it("waits out a rate limit's Retry-After-<throttler> and sends the call again (sandboxCreatesPerWindow, sandboxLifecyclePerWindow)", async () => {
    const connection = await emulated({
      sandboxCreatesPerWindow: 1,
      sandboxLifecyclePerWindow: 1,
      rateWindowSeconds: 2,
    });
    const first = open(connection);
    const second = open(connection);
    await first.initialize();
    // The second creation in the window is refused with 429, then sent again after 2 s.
    const began = Date.now();
    await second.initialize();
    expect(Date.now() - began).toBeGreaterThanOrEqual(1_000);
    // Stopping both: the second stop in the window is refused and sent again.
    await first.close();
    await second.close();
    await second.destroy();
    await first.destroy();
  }, 90_000);

  it('gives up on a service that keeps refusing with BACKEND_UNAVAILABLE, refused and its wait in details (requestsPerWindow)', async () => {
    const connection = await emulated({ requestsPerWindow: 0, rateWindowSeconds: 1 });
    const error = await failure(() => open(connection).initialize());
    expect(error.code, error.message).toBe('BACKEND_UNAVAILABLE');
    expect(error.details).toMatchObject({ refused: true, retryAfterMs: 1_000, attempts: 4 });
  }, 60_000);
});
