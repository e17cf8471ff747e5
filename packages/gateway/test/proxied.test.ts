import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWsError, type SandboxProcess } from '@ws/core';
import {
  GATEWAY_MUX_UPGRADE,
  GatewayLink,
  GatewaySandbox,
  type ProxiedEndpoint,
  sandboxGatewayLauncher,
} from '@ws/core/gateway';
import { LocalSandbox } from '@ws/local/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The built bundle listening on a loopback port, reached the way a vendor's reverse proxy reaches it:
// one connection upgraded to carry the multiplexed streams. Here the endpoint is the port itself.
const bundle = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'gateway.mjs');
const root = mkdtempSync(join(tmpdir(), 'ws-gateway-proxied-'));
const workdir = join(root, 'work');
mkdirSync(workdir);
const host = new LocalSandbox({ workdir });

/** Answers an upgrade request with its status line and headers, or the error. */
function upgrade(port: number, headers: Record<string, string>, path = '/mux'): Promise<string> {
  return new Promise((resolve, reject) => {
    const asked = request({ host: '127.0.0.1', port, path, headers });
    asked.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve(`${response.statusCode} ${String(response.headers.upgrade)}`);
    });
    asked.on('response', (response) => {
      response.resume();
      resolve(String(response.statusCode));
    });
    asked.on('error', reject);
    asked.end();
  });
}

describe('gateway reached through a port proxy', () => {
  const processes: SandboxProcess[] = [];
  const endpoints: number[] = [];
  const link = new GatewayLink(
    sandboxGatewayLauncher({
      start: async (argv) => {
        if (!existsSync(bundle))
          throw new Error(`${bundle} is missing: build @ws/gateway first (npm test does)`);
        const started = await host.spawn(argv, { cwd: workdir });
        processes.push(started);
        return started;
      },
      node: process.execPath,
      bundle,
      workdir,
      socket: {
        kind: 'proxied',
        endpoint: async (port): Promise<ProxiedEndpoint> => {
          endpoints.push(port);
          return { url: `http://127.0.0.1:${port}/`, headers: { 'x-vendor-token': 'passed' } };
        },
      },
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

  it('asks the endpoint of the port the gateway listens on, and carries commands and files byte for byte', async () => {
    expect(endpoints).toHaveLength(1);
    expect(endpoints[0]).toBeGreaterThan(0);
    const result = await sandbox.exec(
      [process.execPath, '-e', 'process.stdin.pipe(process.stdout);process.stderr.write("err")'],
      { stdin: new Uint8Array(256).map((_, index) => index) },
    );
    expect([...result.stdout]).toEqual(Array.from({ length: 256 }, (_, index) => index));
    expect(result.stderrText).toBe('err');
    const bytes = new Uint8Array(5 * 1024 * 1024).map((_, index) => (index * 7919) % 256);
    await sandbox.writeFile('big.bin', bytes);
    expect(Buffer.from(await sandbox.readFile('big.bin')).equals(Buffer.from(bytes))).toBe(true);
  });

  it('refuses an upgrade without the token, to another path or protocol, and accepts the right one', async () => {
    const port = endpoints.at(-1) as number;
    const base = { connection: 'Upgrade', upgrade: GATEWAY_MUX_UPGRADE };
    expect(await upgrade(port, base)).toBe('401');
    expect(await upgrade(port, { ...base, authorization: 'Bearer not-the-token-at-all' })).toBe('401');
    expect(await upgrade(port, { connection: 'Upgrade', upgrade: 'websocket' })).toBe('400');
    expect(await upgrade(port, base, '/exec')).toBe('400');
  });

  it('reports a call cut by the gateway dying as maybe run, and relaunches for the next call', async () => {
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
    await link.start();
    expect(link.currentGeneration).toBe(generation + 1);
    expect(endpoints).toHaveLength(2);
    expect((await sandbox.exec(['echo', 'again'])).stdoutText).toBe('again\n');
  });

  it('exits by itself when no upgraded connection has spoken for the idle time', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [bundle, '--port', '0', '--secrets-stdin', '--idle-exit-ms', '1000', '--workdir', workdir],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stderr?.on('data', (chunk) => {
      log += chunk;
    });
    child.stdin?.write(`${JSON.stringify({ token: 'a-token-of-enough-length', nonce: 'n' })}\n`);
    const began = Date.now();
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(Date.now() - began).toBeGreaterThanOrEqual(900);
    expect(log).toContain('nothing from the host');
    child.stdin?.destroy();
  });
});
