import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWsError, type SandboxProcess } from '@ws/core';
import { GatewayLink, GatewaySandbox, sandboxGatewayLauncher } from '@ws/core/gateway';
import { LocalSandbox } from '@ws/local/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The built bundle, served over its own stdin and stdout (`--stdio`), through a process whose output
// reaches the host only as text: what a vendor SDK that decodes command output as UTF-8 hands over.
const bundle = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'gateway.mjs');
const root = mkdtempSync(join(tmpdir(), 'ws-gateway-stdio-'));
const workdir = join(root, 'work');
mkdirSync(workdir);
const host = new LocalSandbox({ workdir });

/** A process whose stdout passes through a UTF-8 decoder and back, as such an SDK's callbacks do. */
function textOnly(process: SandboxProcess): SandboxProcess {
  const source = process.stdout;
  return Object.assign(Object.create(process) as SandboxProcess, {
    stdout: (async function* () {
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      for await (const chunk of source) yield encoder.encode(decoder.decode(chunk, { stream: true }));
    })(),
    stderr: process.stderr,
    pid: process.pid,
    exited: process.exited,
    write: process.write.bind(process),
    closeStdin: process.closeStdin.bind(process),
    kill: process.kill.bind(process),
    [Symbol.asyncDispose]: process[Symbol.asyncDispose].bind(process),
  });
}

describe('gateway over stdio', () => {
  const processes: SandboxProcess[] = [];
  const link = new GatewayLink(
    sandboxGatewayLauncher({
      start: async (argv) => {
        if (!existsSync(bundle))
          throw new Error(`${bundle} is missing: build @ws/gateway first (npm test does)`);
        const started = textOnly(await host.spawn(argv, { cwd: workdir }));
        processes.push(started);
        return started;
      },
      node: process.execPath,
      bundle,
      workdir,
      socket: { kind: 'stdio' },
    }),
  );
  const sandbox = new GatewaySandbox({ direct: host, link, routeExec: true });

  beforeAll(async () => {
    await link.start();
  });
  afterAll(async () => {
    await link.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('runs commands with stdin, every byte value on stdout, stderr apart and the exit code', async () => {
    const result = await sandbox.exec(
      [
        process.execPath,
        '-e',
        'process.stdin.resume();let n=0;process.stdin.on("data",d=>n+=d.length);process.stdin.on("end",()=>{process.stdout.write(Buffer.from(Array.from({length:256},(_,i)=>i)));process.stderr.write("read "+n);process.exitCode=3})',
      ],
      { stdin: new Uint8Array(100_000) },
    );
    expect(result.exitCode).toBe(3);
    expect(Buffer.from(result.stdout).equals(Buffer.from(Array.from({ length: 256 }, (_, i) => i)))).toBe(
      true,
    );
    expect(result.stderrText).toBe('read 100000');
  });

  it('carries many calls at once and a 10 MB file both ways, byte for byte', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) => sandbox.exec(['sh', '-c', `echo ${index}`])),
    );
    expect(results.map((result) => result.stdoutText.trim())).toEqual(
      Array.from({ length: 20 }, (_, index) => String(index)),
    );
    const bytes = new Uint8Array(10 * 1024 * 1024).map((_, index) => (index * 7919) % 256);
    await sandbox.writeFile('big.bin', bytes);
    const back = await sandbox.readFile('big.bin');
    expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
  });

  it('reports a call cut by the gateway dying as maybe run, and relaunches it for the next call', async () => {
    const generation = link.currentGeneration;
    const running = sandbox.exec(['sleep', '30']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await processes.at(-1)?.kill('SIGKILL');
    const error = await running.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(isWsError(error, 'BACKEND_UNAVAILABLE')).toBe(true);
    expect((error as { details?: { mayHaveRun?: boolean } }).details?.mayHaveRun).toBe(true);
    // The direct way answers meanwhile; the link relaunches the gateway when asked.
    await link.start();
    expect(link.currentGeneration).toBe(generation + 1);
    expect((await sandbox.exec(['echo', 'again'])).stdoutText).toBe('again\n');
  });

  it('exits by itself when the host falls silent, so a gateway left by a dead host does not run on', async () => {
    const child = spawn(
      process.execPath,
      [bundle, '--stdio', '--secrets-stdin', '--idle-exit-ms', '1000', '--workdir', workdir],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stderr.on('data', (chunk) => {
      log += chunk;
    });
    child.stdin.write(`${JSON.stringify({ token: 'a-token-of-enough-length', nonce: 'n' })}\n`);
    const began = Date.now();
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(Date.now() - began).toBeGreaterThanOrEqual(900);
    expect(log).toContain('nothing from the host');
    child.stdin.destroy();
  });
});

describe('gateway over stdio, stalled', () => {
  const stalledRoot = mkdtempSync(join(tmpdir(), 'ws-gateway-stalled-'));
  const stalledHost = new LocalSandbox({ workdir: stalledRoot });
  afterAll(() => rmSync(stalledRoot, { recursive: true, force: true }));

  /** A link to a gateway whose process the test can freeze (SIGSTOP): its output stops, nothing closes. */
  function frozenLink(keepAlive?: { pingMs: number; silenceMs: number }) {
    const started: SandboxProcess[] = [];
    const link = new GatewayLink(
      sandboxGatewayLauncher({
        start: async (argv) => {
          const child = textOnly(await stalledHost.spawn(argv, { cwd: stalledRoot }));
          started.push(child);
          return child;
        },
        node: process.execPath,
        bundle,
        workdir: stalledRoot,
        socket: { kind: 'stdio' },
        ...(keepAlive ? { keepAlive } : {}),
      }),
    );
    const sandbox = new GatewaySandbox({ direct: stalledHost, link, routeExec: true });
    const freeze = () => process.kill(started.at(-1)?.pid as number, 'SIGSTOP');
    const thaw = () => {
      for (const child of started) {
        try {
          if (child.pid) process.kill(child.pid, 'SIGCONT');
        } catch {
          // Gone already: the link stopped it.
        }
      }
    };
    return { link, sandbox, freeze, thaw };
  }

  async function failure(call: Promise<unknown>): Promise<unknown> {
    return call.then(
      () => new Error('expected the call to fail'),
      (error: unknown) => error,
    );
  }

  it("fails a command whose answer never comes soon after the command's own timeout, as maybe run", async () => {
    // The default keep-alive (a 30 s silence): the command's deadline is what ends the call.
    const { link, sandbox, freeze, thaw } = frozenLink();
    try {
      await link.start();
      expect((await sandbox.exec(['echo', 'before'])).stdoutText).toBe('before\n');
      freeze();
      const began = Date.now();
      const error = await failure(sandbox.exec(['sh', '-c', 'sleep 1; echo done'], { timeoutMs: 1_000 }));
      expect(isWsError(error, 'BACKEND_UNAVAILABLE'), String(error)).toBe(true);
      expect((error as { details?: { mayHaveRun?: boolean } }).details?.mayHaveRun).toBe(true);
      expect(String((error as Error).cause)).toContain('the channel to the gateway stalled');
      // The command's 1 s, the 10 s grace, and the health check that finds the gateway gone.
      expect(Date.now() - began).toBeLessThan(25_000);
      // The next call relaunches the gateway.
      thaw();
      await link.start();
      expect((await sandbox.exec(['echo', 'after'])).stdoutText).toBe('after\n');
    } finally {
      thaw();
      await link.stop();
    }
  }, 60_000);

  it('notices a gateway that stopped answering within the silence time, for calls with no timeout', async () => {
    const { link, sandbox, freeze, thaw } = frozenLink({ pingMs: 100, silenceMs: 1_000 });
    try {
      await link.start();
      await sandbox.writeFile('stalled.txt', 'here');
      // Quiet is not stalled: with nothing to say, the gateway's pings keep the channel up.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(new TextDecoder().decode(await sandbox.readFile('stalled.txt'))).toBe('here');
      freeze();
      const began = Date.now();
      const error = await failure(sandbox.exec(['sleep', '30']));
      expect(isWsError(error, 'BACKEND_UNAVAILABLE'), String(error)).toBe(true);
      expect((error as { details?: { mayHaveRun?: boolean } }).details?.mayHaveRun).toBe(true);
      expect(Date.now() - began).toBeLessThan(15_000);
      thaw();
      await link.start();
      expect(new TextDecoder().decode(await sandbox.readFile('stalled.txt'))).toBe('here');
    } finally {
      thaw();
      await link.stop();
    }
  }, 60_000);
});
