import { generateId, isWsError } from '@ws/core';
import { Sandbox } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { E2BWorkspace, killOwnedSandboxes } from '../src/index.js';
import { type EmulatorConnection, emulatorProblem, limitedConnection, stopEmulator } from './emulator.js';

// E2B's limits, met cheaply: each case runs an emulator started with one limit lowered
// (`ws-emulator e2b --limit NAME=VALUE`), through the unmodified SDK.
const problem = await emulatorProblem();
if (problem) console.warn(`[e2b limits] skipped: ${problem}`);
const owner = `ws-e2b-limits-${generateId().slice(0, 8)}`;
const used: EmulatorConnection[] = [];

afterAll(async () => {
  await Promise.all(used.map((emulated) => killOwnedSandboxes(owner, emulated).catch(() => [])));
  await stopEmulator();
}, 120_000);

async function emulatorWith(limits: Record<string, number>): Promise<EmulatorConnection> {
  const emulated = await limitedConnection(limits);
  used.push(emulated);
  return emulated;
}

const open = (emulated: EmulatorConnection, options: Record<string, unknown> = {}) =>
  new E2BWorkspace({ ...emulated, owner, workspaceId: generateId(), gateway: false, ...options });

describe.skipIf(problem !== undefined)('E2BWorkspace within E2B limits', () => {
  it('timeoutMaxMs: a longer time limit than a sandbox may run is cut to the maximum', async () => {
    const emulated = await emulatorWith({ timeoutMaxMs: 600_000 });
    const workspace = open(emulated, { timeoutMs: 1_200_000 });
    await workspace.initialize();
    try {
      const info = await Sandbox.getInfo(workspace.sandboxId!, emulated);
      const lengthMs = info.endAt.getTime() - info.startedAt.getTime();
      expect(lengthMs).toBeGreaterThan(590_000);
      expect(lengthMs).toBeLessThanOrEqual(600_000);
      expect((await workspace.getSandbox().exec(['echo', 'ok'])).stdoutText).toBe('ok\n');
    } finally {
      await workspace.destroy();
    }
  }, 60_000);

  it('sandboxes: one more running sandbox than allowed is LIMIT_EXCEEDED, and opens once one pauses', async () => {
    const emulated = await emulatorWith({ sandboxes: 1 });
    const firstId = generateId();
    const first = open(emulated, { workspaceId: firstId });
    await first.initialize();
    const second = open(emulated);
    const error = await second.initialize().catch((failure: unknown) => failure);
    expect(isWsError(error, 'LIMIT_EXCEEDED'), String(error)).toBe(true);
    expect((error as { details?: Record<string, unknown> }).details).toMatchObject({
      limit: 'sandboxes',
      max: 1,
    });
    await first.close();
    const third = open(emulated);
    await third.initialize();
    await third.destroy();
    await open(emulated, { workspaceId: firstId }).destroy();
  }, 90_000);

  it('apiRequestsPer30s: a request refused by the rate limit is sent again after Retry-After', async () => {
    // 3 requests, then one every 10 s: opening takes the budget, so closing (a pause) is refused first.
    const emulated = await emulatorWith({ apiRequestsPer30s: 3 });
    const workspace = open(emulated);
    await workspace.initialize();
    const sandboxId = workspace.sandboxId!;
    await workspace.close();
    // The budget is spent again: the limit was in force.
    const refused = await fetch(`${emulated.apiUrl}/v2/sandboxes`, {
      headers: { 'x-api-key': emulated.apiKey },
    });
    expect(refused.status).toBe(429);
    // Another key has a budget of its own.
    const info = await Sandbox.getInfo(sandboxId, { ...emulated, apiKey: 'another-key' });
    expect(info.state).toBe('paused');
    await Sandbox.kill(sandboxId, { ...emulated, apiKey: 'another-key' });
  }, 90_000);

  it('apiRequestBytes: a create larger than the API takes is LIMIT_EXCEEDED', async () => {
    const emulated = await emulatorWith({ apiRequestBytes: 4096 });
    const workspace = open(emulated, { env: { FILLER: 'x'.repeat(8192) } });
    const error = await workspace.initialize().catch((failure: unknown) => failure);
    expect(isWsError(error, 'LIMIT_EXCEEDED'), String(error)).toBe(true);
    expect((error as { details?: Record<string, unknown> }).details).toMatchObject({ limit: 'requestBytes' });
  }, 60_000);
});
