import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWsError } from '@ws/core';
import { GatewayClient, type GatewayLauncher, GatewayLink, GatewaySandbox, readText } from '@ws/core/gateway';
import { LocalSandbox } from '@ws/local/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The built bundle itself, started as a host process on a unix socket: what every backend runs.
const bundle = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'gateway.mjs');
const root = mkdtempSync(join(tmpdir(), 'ws-gateway-test-'));
const workdir = join(root, 'work');
const outside = join(root, 'outside');
mkdirSync(workdir);
mkdirSync(outside);

function launcher(allow: string[]): GatewayLauncher {
  let log = '';
  return {
    async launch({ token, nonce }) {
      if (!existsSync(bundle))
        throw new Error(`${bundle} is missing: build @ws/gateway first (npm test does)`);
      const socket = join(root, `gw-${nonce.slice(0, 8)}.sock`);
      const child = spawn(
        process.execPath,
        [
          bundle,
          '--socket',
          socket,
          '--nonce',
          nonce,
          '--workdir',
          workdir,
          ...allow.flatMap((dir) => ['--allow', dir]),
        ],
        {
          env: { ...process.env, WS_GATEWAY_TOKEN: token },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      child.stderr.on('data', (chunk) => {
        log += chunk;
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      return {
        channel: { kind: 'unix', socketPath: socket },
        exited,
        stop: async () => {
          child.kill('SIGTERM');
          await exited;
        },
      };
    },
    logTail: async () => log.slice(-2000),
  };
}

describe('gateway', () => {
  const link = new GatewayLink(launcher([workdir, join(root, 'tmp')]));
  let client: GatewayClient;

  beforeAll(async () => {
    client = await link.start();
  });
  afterAll(async () => {
    await link.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('answers /health without a token and refuses everything else without the right one', async () => {
    const health = await client.health();
    expect(health).toMatchObject({ status: 'ok', protocol: 1 });
    const socketPath = (client.channel as { socketPath: string }).socketPath;
    for (const token of ['', 'wrong-token-wrong-token']) {
      const stranger = new GatewayClient({ kind: 'unix', socketPath }, token);
      const response = await stranger.request('POST', '/files/op', {
        body: JSON.stringify({ op: 'stat', path: workdir }),
      });
      expect(response.statusCode).toBe(401);
      response.resume();
      stranger.close();
    }
  });

  it('runs commands with streamed stdin, output, exit codes, timeouts and aborts', async () => {
    const sandbox = new GatewaySandbox({ direct: new LocalSandbox({ workdir }), link, routeExec: true });
    const echoed = await sandbox.exec(['sh', '-c', 'cat; echo err >&2; exit 3'], { stdin: 'from stdin' });
    expect([echoed.exitCode, echoed.stdoutText, echoed.stderrText]).toEqual([3, 'from stdin', 'err\n']);
    expect((await sandbox.exec(['pwd'])).stdoutText.trim()).toBe(workdir);
    const timed = await sandbox.exec(['sleep', '10'], { timeoutMs: 200 });
    expect([timed.timedOut, timed.exitCode]).toEqual([true, -1]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    let aborted: unknown;
    try {
      await sandbox.exec(['sleep', '10'], { signal: controller.signal });
    } catch (error) {
      aborted = error;
    }
    expect(isWsError(aborted, 'ABORTED')).toBe(true);
    const missing = await sandbox.exec(['ws-no-such-binary']);
    expect(missing.exitCode).toBe(127);
    let streamed = 0;
    const big = await sandbox.exec(['head', '-c', '5000000', '/dev/zero'], {
      maxOutputBytes: 1000,
      onStdout: (chunk) => {
        streamed += chunk.byteLength;
      },
    });
    expect([big.stdout.byteLength, big.truncated, streamed]).toEqual([1000, true, 5_000_000]);
  });

  it('sends only the head of the output when nobody listens to the rest, and says it dropped some', async () => {
    const sandbox = new GatewaySandbox({ direct: new LocalSandbox({ workdir }), link, routeExec: true });
    const capped = await sandbox.exec(['sh', '-c', 'head -c 5000000 /dev/zero; echo err >&2'], {
      maxOutputBytes: 1000,
    });
    expect([capped.stdout.byteLength, capped.stderrText, capped.truncated]).toEqual([1000, 'err\n', true]);
    const whole = await sandbox.exec(['head', '-c', '1000', '/dev/zero'], { maxOutputBytes: 1000 });
    expect([whole.stdout.byteLength, whole.truncated]).toEqual([1000, false]);
    // On the wire: the capped command's stream is its head, not five megabytes.
    const header = new TextEncoder().encode(
      `${JSON.stringify({ argv: ['head', '-c', '5000000', '/dev/zero'], maxOutputBytes: 10 })}\n`,
    );
    const response = await client.request('POST', '/exec', {
      body: (async function* () {
        yield header;
      })(),
    });
    const frames = (await readText(response))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(frames).toEqual([
      { t: 'o', d: Buffer.alloc(10).toString('base64') },
      { t: 'x', exitCode: 0, timedOut: false, truncated: true },
    ]);
  });

  it('confines file operations to the allowed roots, following links', async () => {
    const sandbox = new GatewaySandbox({ direct: new LocalSandbox({ workdir }), link, routeExec: false });
    await sandbox.writeFile('inside/a.txt', 'kept');
    expect(new TextDecoder().decode(await sandbox.readFile('inside/a.txt'))).toBe('kept');
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    symlinkSync(outside, join(workdir, 'escape'));
    for (const action of [
      () => sandbox.readFile(join(outside, 'secret.txt')),
      () => sandbox.readFile('escape/secret.txt'),
      () => sandbox.writeFile('escape/new.txt', 'x'),
      () => sandbox.list('escape'),
      () => sandbox.rename('inside/a.txt', 'escape/moved.txt'),
    ]) {
      let failure: unknown;
      try {
        await action();
      } catch (error) {
        failure = error;
      }
      expect(isWsError(failure, 'PERMISSION_DENIED'), String(failure)).toBe(true);
    }
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(existsSync(join(workdir, 'inside/a.txt'))).toBe(true);
  });

  it('answers malformed and oversized requests with typed errors, and keeps going', async () => {
    const malformed = await client.request('GET', '/mcp/sessions/%E0%A4%A/tools');
    expect(malformed.statusCode).toBe(400);
    expect(JSON.parse(await readText(malformed))).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    // 80 MiB of JSON, streamed: refused at the limit, not buffered.
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    const body = (async function* () {
      yield new TextEncoder().encode('{"spec":');
      for (let index = 0; index < 80; index++) yield chunk;
      yield new TextEncoder().encode('null}');
    })();
    const oversized = await client.request('POST', '/mcp/sessions', { body });
    expect(oversized.statusCode).toBe(413);
    expect(JSON.parse(await readText(oversized))).toMatchObject({ error: { code: 'LIMIT_EXCEEDED' } });
    const header = (async function* () {
      for (let index = 0; index < 80; index++) yield chunk;
    })();
    const endless = await client.request('POST', '/exec', { body: header });
    expect(endless.statusCode).toBe(413);
    await readText(endless);
    expect((await client.health())?.status).toBe('ok');
  });

  it('never commits an upload that was cut off: the file keeps its old bytes', async () => {
    const sandbox = new GatewaySandbox({ direct: new LocalSandbox({ workdir }), link, routeExec: false });
    await sandbox.writeFile('cut.txt', 'old');
    const controller = new AbortController();
    const body = (async function* () {
      yield new Uint8Array(1024 * 1024).fill(0x6e);
      controller.abort();
      await new Promise((resolve) => setTimeout(resolve, 50));
      yield new Uint8Array(1024 * 1024).fill(0x6e);
    })();
    let failure: unknown;
    try {
      await sandbox.writeStream('cut.txt', body, { signal: controller.signal });
    } catch (error) {
      failure = error;
    }
    expect(isWsError(failure, 'ABORTED'), String(failure)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(new TextDecoder().decode(await sandbox.readFile('cut.txt'))).toBe('old');
  });

  it('refuses to listen on anything but a socket or loopback', async () => {
    const child = spawn(
      process.execPath,
      [bundle, '--port', '0', '--host', '0.0.0.0', '--workdir', workdir],
      {
        env: { ...process.env, WS_GATEWAY_TOKEN: 'a-token-of-enough-length' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('loopback');
  });

  it('is reachable through a relay command when there is no direct connection', async () => {
    const socketPath = (client.channel as { socketPath: string }).socketPath;
    const host = new LocalSandbox({ workdir });
    const token = (client as unknown as { token: string }).token;
    const relayed = new GatewayClient(
      { kind: 'relay', sandbox: host, target: socketPath, node: process.execPath },
      token,
    );
    expect((await relayed.health())?.status).toBe('ok');
    const stat = await relayed.json<{ type: string }>('POST', '/files/op', { op: 'stat', path: workdir });
    expect(stat.type).toBe('directory');
  });

  it('survives a sandbox whose command output reaches the host only as text, with base64 relay output', async () => {
    const socketPath = (client.channel as { socketPath: string }).socketPath;
    const token = (client as unknown as { token: string }).token;
    const all = new Uint8Array(256 * 64).map((_, index) => index % 256);
    const path = join(workdir, 'all-bytes.bin');
    writeFileSync(path, all);
    // What a vendor SDK that decodes stdout as UTF-8 hands over: invalid sequences become U+FFFD.
    const host = new LocalSandbox({ workdir });
    const textOnly = Object.create(host) as LocalSandbox;
    textOnly.exec = (argv, options = {}) => {
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      const onStdout = options.onStdout;
      return host.exec(argv, {
        ...options,
        ...(onStdout
          ? {
              onStdout: (chunk: Uint8Array) =>
                onStdout(encoder.encode(decoder.decode(chunk, { stream: true }))),
            }
          : {}),
      });
    };
    const readThrough = async (output: 'binary' | 'base64') => {
      const relayed = new GatewayClient(
        { kind: 'relay', sandbox: textOnly, target: socketPath, node: process.execPath, output },
        token,
      );
      const response = await relayed.request('GET', `/files?path=${encodeURIComponent(path)}`);
      const chunks: Buffer[] = [];
      for await (const chunk of response) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    };
    const lossy = await readThrough('binary').then(
      (bytes) => bytes,
      (error: unknown) => error,
    );
    expect(Buffer.isBuffer(lossy) && lossy.equals(Buffer.from(all))).toBe(false);
    expect((await readThrough('base64')).equals(Buffer.from(all))).toBe(true);
  });
});
