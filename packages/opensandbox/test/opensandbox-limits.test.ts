import { randomBytes } from 'node:crypto';
import { ConnectionConfig, SandboxManager } from '@alibaba-group/opensandbox';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { killOwnedSandboxes, OpenSandboxWorkspace } from '../src/index.js';
import {
  connection,
  type EmulatorConnection,
  emulatorProblem,
  limitedConnection,
  stopEmulator,
} from './emulator.js';

// The OpenSandbox server's limits (apps/emulators/src/opensandbox/limits.ts), met through the
// unmodified SDK against emulators started with `--limit NAME=VALUE`: what the backend does about each.
const problem = await emulatorProblem();
if (problem) console.warn(`[opensandbox limits] skipped: ${problem}`);
const owner = `ws-os-limits-${generateId().slice(0, 8)}`;
const used: EmulatorConnection[] = [];

afterAll(async () => {
  for (const emulated of used) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

async function emulatorWith(limits: Record<string, number> | undefined): Promise<EmulatorConnection> {
  const emulated = limits ? await limitedConnection(limits) : await connection();
  used.push(emulated);
  return emulated;
}

function open(emulated: EmulatorConnection, options: Record<string, unknown> = {}): OpenSandboxWorkspace {
  return new OpenSandboxWorkspace({ ...emulated, owner, workspaceId: generateId(), ...options });
}

/** The sandbox's timeout as the server keeps it: seconds from its creation to its expiry. */
async function timeoutOf(emulated: EmulatorConnection, sandboxId: string): Promise<number> {
  const manager = SandboxManager.create({
    connectionConfig: new ConnectionConfig({ domain: emulated.domain, apiKey: emulated.apiKey }),
  });
  try {
    const info = await manager.getSandboxInfo(sandboxId);
    return Math.round(((info.expiresAt?.getTime() ?? 0) - info.createdAt.getTime()) / 1000);
  } finally {
    await manager.close();
  }
}

describe.skipIf(problem !== undefined)('OpenSandboxWorkspace within the server limits', () => {
  it('raises a timeout below the server minimum (timeoutMinSeconds) to 60 s', async () => {
    const emulated = await emulatorWith(undefined);
    const workspace = open(emulated, { timeoutMs: 10_000, gateway: false });
    await workspace.initialize();
    expect(await timeoutOf(emulated, workspace.sandboxId as string)).toBe(60);
    // Its metadata keeps to the label rules the server checks: times are decimal milliseconds.
    const manager = SandboxManager.create({
      connectionConfig: new ConnectionConfig({ domain: emulated.domain, apiKey: emulated.apiKey }),
    });
    const info = await manager.getSandboxInfo(workspace.sandboxId as string);
    await manager.close();
    expect(info.metadata?.[WS_LABELS.created]).toMatch(/^\d+$/);
    await workspace.destroy();
  }, 120_000);

  it('creates with the server maximum (timeoutMaxSeconds) when asked for longer, and says so', async () => {
    const emulated = await emulatorWith({ timeoutMaxSeconds: 120 });
    const workspace = open(emulated, { timeoutMs: 600_000, gateway: false });
    await workspace.initialize();
    expect(await timeoutOf(emulated, workspace.sandboxId as string)).toBe(120);
    expect(workspace.warnings.join('\n')).toMatch(/at most 120 s/);
    await workspace.destroy();
  }, 120_000);

  it('writes and reads back a 3 MB file whole under a 1 MiB upload limit (uploadBytes)', async () => {
    const emulated = await emulatorWith({ uploadBytes: 1024 * 1024 });
    const workspace = open(emulated, { gateway: false });
    await workspace.initialize();
    const sandbox = workspace.getSandbox();
    const bytes = randomBytes(3 * 1024 * 1024);
    await sandbox.writeFile('big.bin', bytes);
    expect(Buffer.from(await sandbox.readFile('big.bin')).equals(bytes)).toBe(true);
    // Input of a command goes the same way.
    const counted = await sandbox.exec(['wc', '-c'], { stdin: bytes });
    expect(counted.stdoutText.trim()).toBe(String(bytes.length));
    await workspace.destroy();
  }, 120_000);

  it('refuses a workspace id the server cannot keep as a label with a typed error', async () => {
    const emulated = await emulatorWith(undefined);
    const workspace = open(emulated, { workspaceId: 'not a label value', gateway: false });
    const error = await workspace.initialize().catch((failure: unknown) => failure);
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    expect(String(error)).toMatch(/Metadata value 'not a label value' is invalid/);
  }, 60_000);

  it('a listing page larger than the server takes (pageSizeMax) is a typed error', async () => {
    const emulated = await emulatorWith({ pageSizeMax: 50 });
    const error = await open(emulated, { gateway: false })
      .initialize()
      .catch((failure: unknown) => failure);
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
  }, 60_000);

  it('requests past the server concurrency (concurrentRequests) are refused, typed, safe to send again', async () => {
    const emulated = await emulatorWith({ concurrentRequests: 2 });
    const workspace = open(emulated, { gateway: false });
    await workspace.initialize();
    const sandbox = workspace.getSandbox();
    const outcomes = await Promise.allSettled(
      [1, 2, 3, 4].map(() => sandbox.exec(['sleep', '1'], { timeoutMs: 30_000 })),
    );
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    for (const outcome of refused) {
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isWsError(reason, 'BACKEND_UNAVAILABLE'), String(reason)).toBe(true);
      expect(reason.details?.refused).toBe(true);
    }
    await workspace.destroy();
  }, 120_000);

  it('a sandbox holds at most processesPerSandbox processes: a fork past it fails in the sandbox', async () => {
    const emulated = await emulatorWith({ processesPerSandbox: 32 });
    const workspace = open(emulated, { gateway: false });
    await workspace.initialize();
    const result = await workspace
      .getSandbox()
      .exec(['sh', '-c', 'for i in $(seq 64); do sleep 5 & done 2>&1; wait'], { timeoutMs: 30_000 });
    expect(`${result.stdoutText}${result.stderrText}`).toMatch(/resource temporarily unavailable|fork/i);
    await workspace.destroy();
  }, 120_000);
});
