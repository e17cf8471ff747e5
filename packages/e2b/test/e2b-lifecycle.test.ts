import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { startFaultProxy } from '@ws/emulators';
import { Sandbox } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { E2BWorkspace, killOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// What the E2B backend promises beyond the conformance suite, through the unmodified SDK against
// the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[e2b lifecycle] skipped: ${problem}`);
const owner = `ws-e2b-test-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const open = (workspaceId: string, options: Record<string, unknown> = {}) =>
  new E2BWorkspace({ ...emulated, owner, workspaceId, ...options });

async function sandboxesOf(workspaceId: string) {
  return Sandbox.list({ ...emulated, query: { metadata: { [WS_LABELS.id]: workspaceId } } }).nextItems();
}

describe.skipIf(problem !== undefined)('E2BWorkspace on the emulator', () => {
  it("writes exactly a view's bytes through the SDK, never the buffer behind it (no host memory)", async () => {
    // Without the gateway, files go through the SDK, which sends an ArrayBuffer.
    const workspace = open(generateId(), { gateway: false });
    await workspace.initialize();
    try {
      const sandbox = workspace.getSandbox();
      // A small Buffer from Node's pool is a view into 8 KiB of this process's memory.
      const pooled = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ', 'base64');
      expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.byteLength);
      const window = new Uint8Array(4096).fill(7).subarray(100, 200);
      for (const [name, bytes] of [
        ['pooled.bin', pooled],
        ['window.bin', window],
      ] as const) {
        await sandbox.writeFile(name, bytes);
        expect((await sandbox.stat(name)).size, name).toBe(bytes.byteLength);
        expect(Buffer.from(await sandbox.readFile(name)).equals(Buffer.from(bytes)), name).toBe(true);
      }
    } finally {
      await workspace.destroy();
    }
  });

  it('pauses on close and resumes the same sandbox with its files for a new object on the id', async () => {
    const workspaceId = generateId();
    const bytes = randomBytes(1024 * 1024);
    const first = open(workspaceId);
    await first.initialize();
    await first.getSandbox().writeFile('kept.bin', bytes);
    const sandboxId = first.sandboxId;
    await first.close();
    expect((await sandboxesOf(workspaceId)).map((info) => [info.sandboxId, info.state])).toEqual([
      [sandboxId, 'paused'],
    ]);
    const second = open(workspaceId);
    await second.initialize();
    expect(second.sandboxId).toBe(sandboxId);
    expect(Buffer.from(await second.getSandbox().readFile('kept.bin')).equals(bytes)).toBe(true);
    await second.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  });

  it('re-attaches to the sandbox of a host killed without close(), leaving one sandbox', async () => {
    const workspaceId = generateId();
    const script = `const { E2BWorkspace } = await import(${JSON.stringify(built)});
const workspace = new E2BWorkspace(${JSON.stringify({ ...emulated, owner, workspaceId })});
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
    const left = await sandboxesOf(workspaceId);
    expect(left.map((info) => info.state)).toEqual(['paused']);
    await open(workspaceId).destroy();
  }, 90_000);

  it('takes the newest of several sandboxes carrying the id, and says so', async () => {
    const workspaceId = generateId();
    const metadata = { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: owner };
    const older = await Sandbox.create('base', { ...emulated, metadata });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const newer = await Sandbox.create('base', { ...emulated, metadata });
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect(workspace.sandboxId).toBe(newer.sandboxId);
    expect(workspace.warnings.join('\n')).toContain(older.sandboxId);
    await workspace.destroy();
    expect(await sandboxesOf(workspaceId)).toEqual([]);
  }, 90_000);

  it('never touches a sandbox that does not carry its id', async () => {
    const workspaceId = generateId();
    const foreign = await Sandbox.create('base', { ...emulated, metadata: { [WS_LABELS.owner]: owner } });
    const other = await Sandbox.create('base', {
      ...emulated,
      metadata: { [WS_LABELS.id]: `${workspaceId}-other`, [WS_LABELS.owner]: owner },
    });
    const workspace = open(workspaceId);
    await workspace.initialize();
    expect([foreign.sandboxId, other.sandboxId]).not.toContain(workspace.sandboxId);
    await workspace.destroy();
    const states = await Promise.all(
      [foreign, other].map((sandbox) =>
        Sandbox.getInfo(sandbox.sandboxId, emulated).then((info) => info.state),
      ),
    );
    expect(states).toEqual(['running', 'running']);
  }, 90_000);

  it('keeps a second object working when the first closes, and pauses with the last', async () => {
    const workspaceId = generateId();
    const first = open(workspaceId);
    const second = open(workspaceId);
    await first.initialize();
    await second.initialize();
    expect(second.sandboxId).toBe(first.sandboxId);
    await first.close();
    expect((await second.getSandbox().exec(['echo', 'still'])).stdoutText).toBe('still\n');
    await second.close();
    expect((await sandboxesOf(workspaceId)).map((info) => info.state)).toEqual(['paused']);
    await open(workspaceId).destroy();
  }, 90_000);

  it('a write broken mid-upload leaves the old file whole, and no temporary file once the service answers', async () => {
    // Without the gateway a write is three calls (prepare, upload, rename); the proxy breaks the upload.
    const proxy = await startFaultProxy(Number(new URL(emulated!.apiUrl).port));
    const workspace = open(generateId(), {
      gateway: false,
      apiUrl: proxy.url,
      sandboxUrl: proxy.url,
      requestTimeoutMs: 5_000,
    });
    const temporaries = async () =>
      (await workspace.getSandbox().exec(['ls', '-a'])).stdoutText
        .split('\n')
        .filter((name) => /^\.ws-.*\.tmp$/.test(name));
    try {
      await workspace.initialize();
      const sandbox = workspace.getSandbox();
      await sandbox.writeFile('data.bin', 'old');
      let settled = false;
      const writing = sandbox
        .writeFile('data.bin', new Uint8Array(96 * 1024 * 1024).fill(1))
        .then(
          () => undefined,
          (error: unknown) => error,
        )
        .finally(() => {
          settled = true;
        });
      // Break every connection once the temporary file is there (the upload has begun).
      for (let tries = 0; tries < 200 && !settled && (await temporaries()).length === 0; tries++)
        await sleep(25);
      proxy.set('reset');
      const failure = await writing;
      proxy.set('pass');
      expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
      expect(new TextDecoder().decode(await sandbox.readFile('data.bin'))).toBe('old');
      // The removal failed with the upload; the next write removes what is left.
      await sandbox.writeFile('next.txt', 'next');
      expect(await temporaries()).toEqual([]);
    } finally {
      proxy.set('pass');
      await workspace.destroy().catch(() => {});
      await proxy.close();
    }
  }, 120_000);

  it('runs without the gateway through envd alone: streams apart, stdin, exit codes, bytes in files', async () => {
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
    await workspace.destroy();
  }, 90_000);

  it('refuses bad options and a refused key with typed errors', async () => {
    expect(() => new E2BWorkspace({ template: 'base', nope: 1 } as never)).toThrow(/nope/);
    expect(() => new E2BWorkspace({ metadata: { 'ws.workspace.id': 'x' } })).toThrow(/ws\./);
    expect(() => new E2BWorkspace({ timeoutMs: 5 })).toThrow(/timeoutMs/);
    const refused = new E2BWorkspace({ ...emulated, apiKey: '', owner, workspaceId: generateId() });
    // The emulator takes any non-empty key: an empty one is what a missing E2B_API_KEY looks like.
    const saved = process.env.E2B_API_KEY;
    delete process.env.E2B_API_KEY;
    try {
      const error = await refused.initialize().catch((failure: unknown) => failure);
      expect(isWsError(error, 'PERMISSION_DENIED'), String(error)).toBe(true);
    } finally {
      if (saved !== undefined) process.env.E2B_API_KEY = saved;
    }
  });
});
