import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConnectionConfig, Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { gcOpenSandbox, killOwnedSandboxes, OpenSandboxWorkspace } from '../src/index.js';
import { connection, type EmulatorConnection, emulatorProblem, stopEmulator } from './emulator.js';

// What the OpenSandbox backend promises beyond the conformance suite, through the unmodified SDK
// against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[opensandbox lifecycle] skipped: ${problem}`);
const owner = `ws-os-test-${generateId().slice(0, 8)}`;
const emulated = (problem ? undefined : await connection()) as EmulatorConnection;
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string, options: Record<string, unknown> = {}) =>
  new OpenSandboxWorkspace({ ...emulated, owner, workspaceId, ...options });

const config = () => new ConnectionConfig({ domain: emulated.domain, apiKey: emulated.apiKey });

/** Every sandbox carrying the id that still exists, as [id, state]. */
async function sandboxesOf(workspaceId: string): Promise<[string, string][]> {
  const manager = SandboxManager.create({ connectionConfig: config() });
  try {
    const listed = await manager.listSandboxInfos({
      metadata: { [WS_LABELS.id]: workspaceId },
      states: ['Pending', 'Running', 'Pausing', 'Paused', 'Resuming'],
    });
    return listed.items.map((info) => [info.id, info.status.state]);
  } finally {
    await manager.close();
  }
}

async function createRaw(metadata: Record<string, string>): Promise<Sandbox> {
  return Sandbox.create({ image: emulated.image, connectionConfig: config(), metadata });
}

describe.skipIf(problem !== undefined)('OpenSandboxWorkspace on the emulator', () => {
  it('pauses on close and resumes the same sandbox with its files for a new object on the id', async () => {
    const workspaceId = generateId();
    const bytes = randomBytes(1024 * 1024);
    const first = open(workspaceId);
    await first.initialize();
    await first.getSandbox().writeFile('kept.bin', bytes);
    const sandboxId = first.sandboxId;
    await first.close();
    // Pausing takes the server a moment.
    await expect.poll(() => sandboxesOf(workspaceId), { timeout: 15_000 }).toEqual([[sandboxId, 'Paused']]);
    // A connection of the caller's own is used as given: the key beside it is ignored.
    const second = open(workspaceId, { client: config(), apiKey: 'not-the-key' });
    await second.initialize();
    expect(second.sandboxId).toBe(sandboxId);
    expect(Buffer.from(await second.getSandbox().readFile('kept.bin')).equals(bytes)).toBe(true);
    await second.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('resumes a sandbox paused through the SDK itself, files intact', async () => {
    const workspaceId = generateId();
    const first = open(workspaceId);
    await first.initialize();
    await first.getSandbox().writeFile('note.txt', 'before the pause');
    const sandboxId = first.sandboxId as string;
    await first.close();
    const raw = await Sandbox.resume({ sandboxId, connectionConfig: config() });
    expect((await raw.commands.run('cat /workspace/note.txt')).logs.stdout.map((m) => m.text).join('')).toBe(
      'before the pause',
    );
    await raw.pause();
    await raw.close();
    const again = open(workspaceId);
    await again.initialize();
    expect(again.sandboxId).toBe(sandboxId);
    expect(new TextDecoder().decode(await again.getSandbox().readFile('note.txt'))).toBe('before the pause');
    await again.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('re-attaches to the sandbox of a host killed without close(), leaving one sandbox', async () => {
    const workspaceId = generateId();
    const script = `const { OpenSandboxWorkspace } = await import(${JSON.stringify(built)});
const workspace = new OpenSandboxWorkspace(${JSON.stringify({ ...emulated, owner, workspaceId })});
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
    await expect
      .poll(async () => (await sandboxesOf(workspaceId)).map(([, state]) => state), { timeout: 15_000 })
      .toEqual(['Paused']);
    await open(workspaceId).destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 120_000);

  it('takes the newest of several sandboxes carrying the id, and says so', async () => {
    const workspaceId = generateId();
    const metadata = { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: owner };
    const older = await createRaw(metadata);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const newer = await createRaw(metadata);
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect(workspace.sandboxId).toBe(newer.id);
    expect(workspace.warnings.join('\n')).toContain(older.id);
    await workspace.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
    await Promise.all([older.close(), newer.close()]);
  }, 120_000);

  it('never touches a sandbox that does not carry its id', async () => {
    const workspaceId = generateId();
    const foreign = await createRaw({ [WS_LABELS.owner]: owner });
    const other = await createRaw({ [WS_LABELS.id]: `${workspaceId}-other`, [WS_LABELS.owner]: owner });
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect([foreign.id, other.id]).not.toContain(workspace.sandboxId);
    await workspace.destroy();
    const states = await Promise.all(
      [foreign, other].map(async (sandbox) => (await sandbox.getInfo()).status.state),
    );
    expect(states).toEqual(['Running', 'Running']);
    await Promise.all([foreign.kill(), other.kill()]);
    await Promise.all([foreign.close(), other.close()]);
  }, 120_000);

  it('runs without the gateway through execd alone: streams apart, stdin, exit codes, files', async () => {
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
    const timed = await sandbox.exec(['sleep', '30'], { timeoutMs: 300 });
    expect([timed.timedOut, timed.exitCode]).toEqual([true, -1]);
    const child = await sandbox.spawn(['sh', '-c', 'while read line; do echo "got $line"; done']);
    await child.write('one\n');
    await child.write('two\n');
    await child.closeStdin();
    let out = '';
    for await (const chunk of child.stdout) out += new TextDecoder().decode(chunk);
    expect(out).toBe('got one\ngot two\n');
    expect((await child.exited).exitCode).toBe(0);
    await workspace.destroy();
  }, 120_000);

  it('refuses bad options and a refused key with typed errors', async () => {
    expect(() => new OpenSandboxWorkspace({ image: 'x', nope: 1 } as never)).toThrow(/nope/);
    expect(() => new OpenSandboxWorkspace({ metadata: { 'ws.workspace.id': 'x' } })).toThrow(/ws\./);
    expect(() => new OpenSandboxWorkspace({ timeoutMs: 5 })).toThrow(/timeoutMs/);
    expect(() => new OpenSandboxWorkspace({ connectionConfig: config() } as never)).toThrow(
      /no option "connectionConfig"; use "client"/,
    );
    await expect(gcOpenSandbox({ olderThanMs: 0, connectionConfig: config() } as never)).rejects.toThrow(
      /use "client"/,
    );
    const refused = open(generateId(), { apiKey: 'not-the-key' });
    const error = await refused.initialize().catch((failure: unknown) => failure);
    expect(isWsError(error, 'PERMISSION_DENIED'), String(error)).toBe(true);
  });
});
