import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { BubblewrapWorkspace, BwrapSandbox, bubblewrapProblem } from '../src/index.js';

const problem = requireEngine('bubblewrap', bubblewrapProblem());
if (problem) console.warn(`[bwrap-sandbox] skipped: ${problem}`);
if (problem) console.warn(`[bwrap] skipped: ${problem}`);
const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-test-'));
const cache = mkdtempSync(join(tmpdir(), 'ws-bwrap-test-cache-'));
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});
let counter = 0;
const open = (options: ConstructorParameters<typeof BubblewrapWorkspace>[0] = {}) =>
  BubblewrapWorkspace.open({ hostWorkdir: join(base, `w${++counter}`), hostRuntimeDir: cache, ...options });

async function rejection(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe.skipIf(problem !== undefined)('bwrap sandbox', () => {
  it('builds the documented bwrap argv: namespaces unshared, no capabilities, sysctls read-only, network shared by default, no /opt', () => {
    const sandbox = new BwrapSandbox(
      { hostWorkdir: '/h/w', hostTmp: '/h/t', shareNet: true, readOnlyPaths: [] },
      {},
    );
    const argv = sandbox.argv(['true'], '/workspace');
    expect(argv.slice(0, 9)).toEqual([
      'bwrap',
      '--json-status-fd',
      '3',
      '--die-with-parent',
      '--new-session',
      '--unshare-all',
      '--cap-drop',
      'ALL',
      '--share-net',
    ]);
    expect(argv.join(' ')).toContain('--proc /proc --ro-bind /proc/sys /proc/sys');
    expect(argv.join(' ')).toContain('--bind /h/w /workspace --bind /h/t /tmp');
    expect(argv.join(' ')).toContain('--remount-ro /');
    expect(argv).not.toContain('/opt');
    expect(argv.slice(-4)).toEqual(['--chdir', '/workspace', '--', 'true']);
    const isolated = new BwrapSandbox(
      { hostWorkdir: '/h/w', hostTmp: '/h/t', shareNet: false, readOnlyPaths: [] },
      {},
    );
    expect(isolated.argv(['true'], '/workspace')).not.toContain('--share-net');
  });

  it('refuses writes outside /workspace and /tmp and through escaping links, with a typed error and the host untouched', async () => {
    for (const gateway of [true, false]) {
      const workspace = await open({ gateway });
      try {
        const sandbox = workspace.getSandbox();
        const passwd = readFileSync('/etc/passwd', 'utf8');
        const outside = join(base, `outside-${gateway}.txt`);
        writeFileSync(outside, 'original');
        await sandbox.exec(['ln', '-s', '/etc/passwd', '/workspace/to-passwd']);
        await sandbox.exec(['ln', '-s', '/', '/workspace/to-root']);
        for (const path of [
          '/etc/x',
          '/workspace/to-passwd',
          '/workspace/to-root/etc/y',
          '/opt/z',
          '/workspace/../etc/w',
        ]) {
          const error = await rejection(() => sandbox.writeFile(path, 'x'));
          expect(
            isWsError(error, 'PERMISSION_DENIED'),
            `${path} (gateway ${gateway}): ${String(error)}`,
          ).toBe(true);
        }
        expect(
          isWsError(await rejection(() => sandbox.readFile('/workspace/to-passwd')), 'PERMISSION_DENIED'),
        ).toBe(true);
        const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
        const written = await tools.Write!.call({ file_path: '/etc/evil', content: 'x' });
        expect(written.isError).toBe(true);
        expect(readFileSync('/etc/passwd', 'utf8')).toBe(passwd);
        expect(readFileSync(outside, 'utf8')).toBe('original');
        expect(existsSync('/etc/evil')).toBe(false);
        // What a command writes outside /workspace and /tmp fails too: the sandbox's root is read-only.
        const shell = await sandbox.exec(['sh', '-c', 'echo x > /etc/evil']);
        expect(shell.exitCode).not.toBe(0);
      } finally {
        await workspace.close();
      }
    }
  });

  it('keeps the base environment: a caller cannot override HOME, PATH or PWD', async () => {
    const workspace = await open({ env: { HOME: '/evil', PATH: '/evil', EXTRA: 'kept' } });
    try {
      await workspace.getSandbox().mkdir('sub');
      const result = await workspace
        .getSandbox()
        .exec(['sh', '-c', 'echo "$HOME|$PATH|$PWD|$EXTRA"'], { cwd: 'sub', env: { HOME: '/again' } });
      expect(result.stdoutText.trim()).toBe(
        '/workspace|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/workspace/sub|kept',
      );
    } finally {
      await workspace.close();
    }
  });

  it('shares the host network by default and has none with shareNet: false', async () => {
    const server = createServer((socket) => socket.end('pong'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const probe = [
      'node',
      '-e',
      `require('net').connect(${port},'127.0.0.1').on('data',d=>{console.log(String(d));process.exit(0)}).on('error',()=>{console.log('refused');process.exit(0)})`,
    ];
    try {
      const shared = await open();
      const isolated = await open({ shareNet: false });
      try {
        expect((await shared.getSandbox().exec(probe)).stdoutText.trim()).toBe('pong');
        expect((await isolated.getSandbox().exec(probe)).stdoutText.trim()).toBe('refused');
        // MCP still works without a network: the gateway listens on a unix socket.
        expect(isolated.capabilities.mcp).toBe(true);
      } finally {
        await shared.close();
        await isolated.close();
      }
    } finally {
      server.close();
    }
  });

  it('uses a private temporary workdir when none is given, and removes it on close', async () => {
    const workspace = await BubblewrapWorkspace.open({ hostRuntimeDir: cache });
    expect(workspace.capabilities.persistent).toBe(false);
    await workspace.getSandbox().writeFile('f.txt', 'hi');
    const host = workspace.hostWorkdir!;
    expect(readFileSync(join(host, 'f.txt'), 'utf8')).toBe('hi');
    await workspace.close();
    expect(existsSync(host)).toBe(false);
  });

  it('leaves no sandbox running when a process is stopped the moment it starts', async () => {
    // bubblewrap's child outlives a bwrap killed before the child asked to die with it; stopped at
    // 0-6 ms, about one in ten plain bwrap processes left its sandbox running this way.
    const marker = String(700_000 + Math.floor(Math.random() * 100_000));
    const running = () =>
      readdirSync('/proc').filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`sleep\0${marker}`);
        } catch {
          return false;
        }
      });
    const workspace = await BubblewrapWorkspace.open({ hostRuntimeDir: cache, gateway: false });
    const sandbox = workspace.getSandbox();
    try {
      for (let round = 0; round < 100; round += 1) {
        const started = await sandbox.spawn(['sleep', marker]);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 6));
        if (round % 2 === 0) await started.kill('SIGTERM');
        else await started[Symbol.asyncDispose]();
        await started.exited;
      }
      for (let round = 0; round < 30; round += 1) {
        const result = await sandbox.exec(['sleep', marker], { timeoutMs: Math.floor(Math.random() * 6) });
        expect(result.timedOut).toBe(true);
      }
      expect(running()).toEqual([]);
    } finally {
      await workspace.close();
      for (const pid of running()) process.kill(Number(pid), 'SIGKILL');
    }
  }, 60_000);

  it('refuses a cache directory that overlaps the workdir', async () => {
    const workdir = join(base, 'overlap');
    const error = await rejection(() =>
      BubblewrapWorkspace.open({ hostWorkdir: workdir, hostRuntimeDir: join(workdir, 'cache') }),
    );
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
  });
});
