import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daytona } from '@daytonaio/sdk';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { DaytonaWorkspace, deleteOwnedSandboxes, gcDaytona } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// What the Daytona backend promises beyond the conformance suite, through the unmodified SDK against
// the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[daytona lifecycle] skipped: ${problem}`);
const owner = `ws-daytona-test-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const daytona = emulated ? new Daytona(emulated) : undefined;

afterAll(async () => {
  await daytona?.[Symbol.asyncDispose]();
  if (emulated) await deleteOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string, options: Record<string, unknown> = {}) =>
  new DaytonaWorkspace({ ...emulated, owner, workspaceId, ...options });

/** [id, state] of every sandbox carrying the workspace id. */
async function sandboxesOf(workspaceId: string): Promise<[string, string | undefined][]> {
  const found: [string, string | undefined][] = [];
  for await (const sandbox of daytona!.list({ labels: { [WS_LABELS.id]: workspaceId } }))
    found.push([sandbox.id, sandbox.state]);
  return found;
}

describe.skipIf(problem !== undefined)('DaytonaWorkspace on the emulator', () => {
  it('stops on close and starts the same sandbox with its files for a new object on the id', async () => {
    const workspaceId = generateId();
    const bytes = randomBytes(1024 * 1024);
    // The time limit becomes Daytona's auto-stop interval, in whole minutes rounded up.
    const first = open(workspaceId, { timeoutMs: 90_000 });
    await first.initialize();
    await first.getSandbox().writeFile('kept.bin', bytes);
    const sandboxId = first.sandboxId as string;
    expect((await daytona!.get(sandboxId)).autoStopInterval).toBe(2);
    await first.close();
    expect(await sandboxesOf(workspaceId)).toEqual([[sandboxId, 'stopped']]);
    // A client of the caller's own is used and left open.
    const second = new DaytonaWorkspace({ client: daytona, owner, workspaceId });
    await second.initialize();
    expect(second.sandboxId).toBe(sandboxId);
    expect(Buffer.from(await second.getSandbox().readFile('kept.bin')).equals(bytes)).toBe(true);
    await second.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  });

  it('starts an archived sandbox again', async () => {
    const workspaceId = generateId();
    const first = open(workspaceId);
    await first.initialize();
    await first.getSandbox().writeFile('note.txt', 'archived and back');
    const sandboxId = first.sandboxId!;
    await first.close();
    const sandbox = await daytona!.get(sandboxId);
    await sandbox.archive();
    const second = open(workspaceId);
    await second.initialize();
    expect(second.sandboxId).toBe(sandboxId);
    expect(new TextDecoder().decode(await second.getSandbox().readFile('note.txt'))).toBe(
      'archived and back',
    );
    await second.destroy();
  });

  it('re-attaches to the sandbox of a host killed without close(), leaving one sandbox', async () => {
    const workspaceId = generateId();
    const script = `const { DaytonaWorkspace } = await import(${JSON.stringify(built)});
const workspace = new DaytonaWorkspace(${JSON.stringify({ ...emulated, owner, workspaceId })});
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
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const next = open(workspaceId);
    await next.initialize();
    const text = new TextDecoder().decode(await next.getSandbox().readFile('from-killed.txt'));
    expect(text).toBe('still here');
    await next.close();
    expect((await sandboxesOf(workspaceId)).map(([, state]) => state)).toEqual(['stopped']);
    await open(workspaceId).destroy();
  }, 90_000);

  it('takes the newest of several sandboxes carrying the id, and says so', async () => {
    const workspaceId = generateId();
    const labels = { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: owner };
    const older = await daytona!.create({ labels });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const newer = await daytona!.create({ labels });
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect(workspace.sandboxId).toBe(newer.id);
    expect(workspace.warnings.join('\n')).toContain(older.id);
    await workspace.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 90_000);

  it('never touches a sandbox that does not carry its id', async () => {
    const workspaceId = generateId();
    const foreign = await daytona!.create({ labels: { [WS_LABELS.owner]: owner } });
    const other = await daytona!.create({
      labels: { [WS_LABELS.id]: `${workspaceId}-other`, [WS_LABELS.owner]: owner },
    });
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect([foreign.id, other.id]).not.toContain(workspace.sandboxId);
    await workspace.close();
    await workspace.destroy();
    const states = await Promise.all(
      [foreign, other].map(async (sandbox) => (await daytona!.get(sandbox.id)).state),
    );
    expect(states).toEqual(['started', 'started']);
  }, 90_000);

  it('keeps a second object working when the first closes, and stops with the last', async () => {
    const workspaceId = generateId();
    const first = open(workspaceId);
    const second = open(workspaceId);
    await first.initialize();
    await second.initialize();
    expect(second.sandboxId).toBe(first.sandboxId);
    await first.close();
    expect((await second.getSandbox().exec(['echo', 'still'])).stdoutText).toBe('still\n');
    await second.close();
    expect((await sandboxesOf(workspaceId)).map(([, state]) => state)).toEqual(['stopped']);
    await open(workspaceId).destroy();
  }, 90_000);

  it('runs without the gateway through the toolbox alone: streams apart, stdin, exit codes, bytes in files', async () => {
    const workspace = open(generateId(), { gateway: false });
    await workspace.initialize();
    const sandbox = workspace.getSandbox();
    const result = await sandbox.exec(['sh', '-c', 'cat; echo err >&2; exit 3'], { stdin: 'piped' });
    expect([result.exitCode, result.stdoutText, result.stderrText]).toEqual([3, 'piped', 'err\n']);
    const missing = await sandbox.exec(['true'], { cwd: 'no/such/dir' }).catch((error: unknown) => error);
    expect(isWsError(missing, 'NOT_FOUND')).toBe(true);
    const all = new Uint8Array(256).map((_, index) => index);
    await sandbox.writeFile('all.bin', all);
    expect(Buffer.from(await sandbox.readFile('all.bin')).equals(Buffer.from(all))).toBe(true);
    await sandbox.exec(['ln', '-s', 'all.bin', 'link.bin']);
    expect(await sandbox.stat('link.bin')).toMatchObject({ type: 'file', size: 256 });
    const timed = await sandbox.exec(['sleep', '30'], { timeoutMs: 300 });
    expect([timed.timedOut, timed.exitCode]).toEqual([true, -1]);
    await workspace.destroy();
  }, 90_000);

  it('closes quietly when the sandbox was stopped meanwhile (the service refuses a second stop)', async () => {
    const workspaceId = generateId();
    const workspace = open(workspaceId, { gateway: false });
    await workspace.initialize();
    const sandboxId = workspace.sandboxId!;
    await (await daytona!.get(sandboxId)).stop();
    await workspace.close();
    expect(await sandboxesOf(workspaceId)).toEqual([[sandboxId, 'stopped']]);
    await open(workspaceId).destroy();
  }, 90_000);

  it('destroys a sandbox another hand is stopping: waits out the refusal (409), then deletes it', async () => {
    const workspaceId = generateId();
    const workspace = open(workspaceId, { gateway: false });
    await workspace.initialize();
    const sandboxId = workspace.sandboxId!;
    await workspace.getSandbox().writeFile('x.txt', 'x');
    // Asked to stop without waiting: the sandbox is `stopping` for a while.
    const stopping = await fetch(`${emulated!.apiUrl}/sandbox/${sandboxId}/stop`, {
      method: 'POST',
      headers: { authorization: `Bearer ${emulated!.apiKey}` },
    });
    expect(stopping.status).toBe(200);
    await open(workspaceId).destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 90_000);

  it('refuses bad options and a refused key with typed errors', async () => {
    expect(() => new DaytonaWorkspace({ snapshot: 'default', nope: 1 } as never)).toThrow(/nope/);
    expect(() => new DaytonaWorkspace({ labels: { 'ws.workspace.id': 'x' } })).toThrow(/ws\./);
    expect(() => new DaytonaWorkspace({ timeoutMs: 5 })).toThrow(/timeoutMs must be null or/);
    expect(() => new DaytonaWorkspace({ lifecycleTimeoutMs: 5 })).toThrow(/lifecycleTimeoutMs must be/);
    expect(() => new DaytonaWorkspace({ autoStopInterval: 15 } as never)).toThrow(
      /no option "autoStopInterval"; use "timeoutMs"/,
    );
    await expect(gcDaytona({ olderThanMs: 0, timeoutMs: 5 } as never)).rejects.toThrow(
      /use "lifecycleTimeoutMs"/,
    );
    expect(() => new DaytonaWorkspace({ image: 'a', snapshot: 'b' })).toThrow(/not both/);
    expect(() => new DaytonaWorkspace({ resources: { cpu: 1 } })).toThrow(/image/);
    const saved = process.env.DAYTONA_API_KEY;
    delete process.env.DAYTONA_API_KEY;
    try {
      const missing = new DaytonaWorkspace({ apiUrl: emulated!.apiUrl, owner, workspaceId: generateId() });
      const error = await missing.initialize().catch((failure: unknown) => failure);
      expect(isWsError(error, 'PERMISSION_DENIED'), String(error)).toBe(true);
    } finally {
      if (saved !== undefined) process.env.DAYTONA_API_KEY = saved;
    }
  });
});
