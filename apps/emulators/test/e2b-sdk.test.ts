import { randomBytes } from 'node:crypto';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  NotFoundError,
  RateLimitError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
} from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2B_LABELS, type E2BEmulator, removeEmulatorSandboxes, startE2BEmulator } from '../src/index.js';
import { dockerProblem } from './engine-check.js';

// The whole file drives the unmodified e2b SDK against one emulator; sandboxes are real containers of
// the image behind the `base` template.
const image = 'ws-workspace:bookworm';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[e2b-sdk] skipped: ${problem}`);

const docker = new Docker();
const suite = `sdk-${randomBytes(4).toString('hex')}`;
let emulator: E2BEmulator | undefined;
let sandbox: Sandbox;
let second: Sandbox;

const connection = () => ({
  apiKey: emulator!.env.E2B_API_KEY!,
  apiUrl: emulator!.apiUrl,
  sandboxUrl: emulator!.sandboxUrl,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  if (problem) return;
  emulator = await startE2BEmulator({ keepaliveMs: 200, instance: suite });
});

afterAll(async () => {
  await emulator?.close();
  // Only this file's sandboxes (its own instance): other suites drive emulators at the same time.
  if (!problem) {
    await removeEmulatorSandboxes(docker, { instance: suite });
  }
});

async function rejection(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Encodes one Connect streaming envelope (flags 0, JSON message). */
function envelope(message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const header = Buffer.alloc(5);
  header.writeUInt32BE(json.length, 1);
  return Buffer.concat([header, json]);
}

/** Decodes every envelope of a Connect streaming response body. */
function envelopes(body: Buffer): { flags: number; message: Record<string, unknown> }[] {
  const out: { flags: number; message: Record<string, unknown> }[] = [];
  for (let offset = 0; offset + 5 <= body.length; ) {
    const length = body.readUInt32BE(offset + 1);
    const json = body.subarray(offset + 5, offset + 5 + length).toString('utf8');
    out.push({ flags: body[offset]!, message: JSON.parse(json) as Record<string, unknown> });
    offset += 5 + length;
  }
  return out;
}

async function accessToken(sandboxId: string): Promise<string> {
  const response = await fetch(`${emulator!.apiUrl}/sandboxes/${sandboxId}`, {
    headers: { 'x-api-key': connection().apiKey },
  });
  return ((await response.json()) as { envdAccessToken: string }).envdAccessToken;
}

async function accessTokenOf(started: E2BEmulator, apiKey: string, sandboxId: string): Promise<string> {
  const response = await fetch(`${started.apiUrl}/sandboxes/${sandboxId}`, {
    headers: { 'x-api-key': apiKey },
  });
  return ((await response.json()) as { envdAccessToken: string }).envdAccessToken;
}

async function countProcesses(target: Sandbox, pattern: string): Promise<number> {
  const result = await target.commands.run(`ps -eo args= | grep -c -- '${pattern}' || true`);
  return Number(result.stdout.trim());
}

describe.skipIf(problem !== undefined)('E2B emulator driven by the e2b SDK', () => {
  it('creates a sandbox from a template, with metadata and env vars', async () => {
    sandbox = await Sandbox.create('base', {
      ...connection(),
      metadata: { suite, role: 'main' },
      envs: { GREETING: 'hello' },
      timeoutMs: 300_000,
    });
    const info = await sandbox.getInfo();
    expect(info).toMatchObject({
      sandboxId: sandbox.sandboxId,
      templateId: 'base',
      metadata: { suite, role: 'main' },
      state: 'running',
      envdVersion: '0.6.4',
    });
    expect(info.endAt.getTime() - info.startedAt.getTime()).toBe(300_000);
    expect(await sandbox.isRunning()).toBe(true);
    const containers = await docker.listContainers({
      filters: { label: [`${E2B_LABELS.sandboxId}=${sandbox.sandboxId}`] },
    });
    expect(containers.map((container) => container.Image)).toEqual([image]);
  });

  it('runs commands: stdout and stderr apart, env, cwd, streamed output, users', async () => {
    const result = await sandbox.commands.run('echo "$GREETING $CALLER"; echo oops >&2; pwd; id -un', {
      envs: { CALLER: 'sdk' },
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hello sdk\n/root\nroot\n', stderr: 'oops\n' });
    expect((await sandbox.commands.run('pwd', { cwd: '/tmp' })).stdout).toBe('/tmp\n');
    const streamed: string[] = [];
    await sandbox.commands.run('printf first; sleep 0.3; printf second', {
      onStdout: (data) => void streamed.push(data),
    });
    expect(streamed).toEqual(['first', 'second']);
    // `user` (E2B's default user) is root here; a real account is used as itself.
    expect((await sandbox.commands.run('id -un; echo $HOME', { user: 'user' })).stdout).toBe('root\n/root\n');
    expect((await sandbox.commands.run('id -un', { user: 'nobody', cwd: '/tmp' })).stdout).toBe('nobody\n');
  });

  it('reports a non-zero exit as CommandExitError, and a start failure as its own error', async () => {
    const error = await rejection(() => sandbox.commands.run('echo partial; echo bad >&2; exit 7'));
    expect(error).toBeInstanceOf(CommandExitError);
    expect(error).toMatchObject({
      exitCode: 7,
      stdout: 'partial\n',
      stderr: 'bad\n',
      error: 'exit status 7',
    });
    expect(await rejection(() => sandbox.commands.run('pwd', { cwd: '/no/such/dir' }))).toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await rejection(() => sandbox.commands.run('id', { user: 'ghost' }))).toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('feeds stdin to a background command, then closes it', async () => {
    const handle = await sandbox.commands.run('cat; echo "<eof>"', { background: true, stdin: true });
    await handle.sendStdin('line one\n');
    await sandbox.commands.sendStdin(handle.pid, new TextEncoder().encode('bytes\n'));
    await handle.closeStdin();
    expect((await handle.wait()).stdout).toBe('line one\nbytes\n<eof>\n');
  });

  it('kills a background command with its children; finished pids are not found', async () => {
    const handle = await sandbox.commands.run('sleep 300 & sleep 301; wait', { background: true });
    const listed = await sandbox.commands.list();
    expect(listed.find((process) => process.pid === handle.pid)).toMatchObject({
      cmd: '/bin/bash',
      args: ['-l', '-c', 'sleep 300 & sleep 301; wait'],
    });
    // The pid is the command's own inside the sandbox.
    expect((await sandbox.commands.run(`cat /proc/${handle.pid}/comm`)).stdout).toBe('bash\n');
    expect(await countProcesses(sandbox, '^sleep 30[01]$')).toBe(2);
    expect(await sandbox.commands.kill(handle.pid)).toBe(true);
    const error = await rejection(() => handle.wait());
    expect(error).toBeInstanceOf(CommandExitError);
    expect(error).toMatchObject({ exitCode: -1, error: 'signal: killed' });
    expect(await countProcesses(sandbox, '^sleep 30[01]$')).toBe(0);
    expect(await sandbox.commands.kill(handle.pid)).toBe(false);
    expect(await rejection(() => sandbox.commands.connect(handle.pid))).toBeInstanceOf(NotFoundError);
    expect((await sandbox.commands.list()).some((process) => process.pid === handle.pid)).toBe(false);
  });

  it('reconnects to a running command', async () => {
    const handle = await sandbox.commands.run('for i in 1 2 3 4 5; do echo $i; sleep 0.2; done', {
      background: true,
    });
    await handle.disconnect();
    const again = await sandbox.commands.connect(handle.pid);
    const result = await again.wait();
    expect(result.exitCode).toBe(0);
    expect(result.stdout.endsWith('4\n5\n')).toBe(true);
  });

  it('lets a command run on when a subscriber that stopped reading goes away', async () => {
    // 40 MB of output: far more than a subscriber may hold before the command is paused for it.
    const size = 40_000_000;
    let received = 0;
    const handle = await sandbox.commands.run(`read go; head -c ${size} /dev/zero | tr '\\0' x`, {
      background: true,
      stdin: true,
      onStdout: (text) => {
        received += text.length;
      },
    });
    // A second subscriber that reads nothing, so the server's writes to it back up.
    const token = await accessToken(sandbox.sandboxId);
    const stalled = new AbortController();
    const response = await fetch(`${emulator!.sandboxUrl}/process.Process/Connect`, {
      method: 'POST',
      headers: {
        'e2b-sandbox-id': sandbox.sandboxId,
        'x-access-token': token,
        'content-type': 'application/connect+json',
      },
      body: envelope({ process: { pid: handle.pid } }),
      signal: stalled.signal,
    });
    expect(response.status).toBe(200);
    await handle.sendStdin('go\n');
    // The command is held while that subscriber is behind; once it goes, the output flows to the end.
    await sleep(1500);
    expect(received).toBeLessThan(size);
    stalled.abort();
    await handle.wait();
    expect(received).toBe(size);
  }, 60_000);

  it('speaks envd on the wire: keepalives, Connect-Timeout-Ms kills the command, access token, health', async () => {
    const token = await accessToken(sandbox.sandboxId);
    const headers = { 'e2b-sandbox-id': sandbox.sandboxId, 'x-access-token': token };
    const started = Date.now();
    const response = await fetch(`${emulator!.sandboxUrl}/process.Process/Start`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/connect+json', 'connect-timeout-ms': '1500' },
      body: envelope({
        process: { cmd: '/bin/sh', args: ['-c', 'echo begin; exec sleep 30'] },
        stdin: false,
      }),
    });
    expect(response.status).toBe(200);
    const frames = envelopes(Buffer.from(await response.arrayBuffer()));
    expect(Date.now() - started).toBeLessThan(10_000);
    const events = frames
      .filter((frame) => frame.flags === 0)
      .map((frame) => frame.message.event as Record<string, unknown>);
    const pid = (events[0]?.start as { pid: number } | undefined)?.pid;
    expect(pid).toBeGreaterThan(0);
    expect(events[1]).toEqual({ data: { stdout: Buffer.from('begin\n').toString('base64') } });
    expect(events.filter((event) => 'keepalive' in event).length).toBeGreaterThanOrEqual(3);
    expect(frames.at(-1)).toEqual({
      flags: 2,
      message: { error: expect.objectContaining({ code: 'deadline_exceeded' }) },
    });
    // envd kills a command whose request deadline passed.
    let alive = true;
    for (let attempt = 0; attempt < 20 && alive; attempt++) {
      alive = (await sandbox.commands.list()).some((process) => process.pid === pid);
      if (alive) await sleep(100);
    }
    expect(alive).toBe(false);
    expect(await countProcesses(sandbox, '^sleep 30$')).toBe(0);

    const list = (accessHeader: string) =>
      fetch(`${emulator!.sandboxUrl}/process.Process/List`, {
        method: 'POST',
        headers: { ...headers, 'x-access-token': accessHeader, 'content-type': 'application/json' },
        body: '{}',
      });
    const refused = await list('wrong-token');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'unauthenticated' });
    expect((await list(token)).status).toBe(200);
    const health = await fetch(`${emulator!.sandboxUrl}/health`, { headers });
    expect(health.status).toBe(204);
  });

  it('moves files: directories, a 10 MB binary round trip, info, list, rename, remove', async () => {
    const files = sandbox.files;
    expect(await files.makeDir('/tmp/work/nested')).toBe(true);
    expect(await files.makeDir('/tmp/work/nested')).toBe(false);
    const big = randomBytes(10 * 1024 * 1024);
    const written = await files.write('/tmp/work/big.bin', new Uint8Array(big).buffer);
    expect(written).toMatchObject({ name: 'big.bin', path: '/tmp/work/big.bin', type: 'file' });
    const back = await files.read('/tmp/work/big.bin', { format: 'bytes' });
    expect(back.length).toBe(big.length);
    expect(Buffer.from(back).equals(big)).toBe(true);
    // Both upload forms of envd: multipart (above, the default) and a raw body, gzip-encoded or not.
    await files.write('/tmp/work/raw.txt', 'raw body', { useOctetStream: true });
    await files.write('/tmp/work/nested/zipped.txt', 'gzip body', { gzip: true });
    expect(await files.read('/tmp/work/raw.txt')).toBe('raw body');
    expect(await files.read('/tmp/work/nested/zipped.txt')).toBe('gzip body');
    expect(
      await files.write([
        { path: 'notes/a.txt', data: 'relative to home' },
        { path: '/tmp/work/empty.txt', data: '' },
      ]),
    ).toMatchObject([{ path: '/root/notes/a.txt' }, { path: '/tmp/work/empty.txt' }]);
    expect(await files.read('/root/notes/a.txt')).toBe('relative to home');
    expect(await files.read('/tmp/work/empty.txt')).toBe('');

    expect(await files.exists('/tmp/work/big.bin')).toBe(true);
    expect(await files.exists('/tmp/work/missing')).toBe(false);
    expect(await files.getInfo('/tmp/work/big.bin')).toMatchObject({
      name: 'big.bin',
      type: 'file',
      size: big.length,
      mode: 0o644,
      permissions: '-rw-r--r--',
      owner: 'root',
      group: 'root',
    });
    const info = await files.getInfo('/tmp/work/big.bin');
    expect(Math.abs(info.modifiedTime!.getTime() - Date.now())).toBeLessThan(60_000);
    const top = await files.list('/tmp/work');
    expect(top.map((entry) => `${entry.type} ${entry.name}`)).toEqual([
      'file big.bin',
      'file empty.txt',
      'dir nested',
      'file raw.txt',
    ]);
    const deep = await files.list('/tmp/work', { depth: 2 });
    expect(deep.map((entry) => entry.path)).toContain('/tmp/work/nested/zipped.txt');

    const moved = await files.rename('/tmp/work/big.bin', '/tmp/elsewhere/moved.bin');
    expect(moved).toMatchObject({ path: '/tmp/elsewhere/moved.bin', type: 'file', size: big.length });
    expect(await files.exists('/tmp/work/big.bin')).toBe(false);
    await files.remove('/tmp/elsewhere');
    expect(await files.exists('/tmp/elsewhere/moved.bin')).toBe(false);
    expect(await rejection(() => files.read('/tmp/elsewhere/moved.bin'))).toBeInstanceOf(FileNotFoundError);
    expect(await rejection(() => files.getInfo('/tmp/elsewhere'))).toBeInstanceOf(FileNotFoundError);
  });

  it('lists sandboxes by metadata and state, a page at a time', async () => {
    second = await Sandbox.create('base', {
      ...connection(),
      metadata: { suite, role: 'second', 'with space': 'a&b=c%d' },
    });
    const ids = [sandbox.sandboxId, second.sandboxId].sort();
    const all = await Sandbox.list({ ...connection(), query: { metadata: { suite } } }).nextItems();
    expect(all.map((item) => item.sandboxId).sort()).toEqual(ids);
    expect(all.find((item) => item.sandboxId === second.sandboxId)?.metadata).toEqual({
      suite,
      role: 'second',
      'with space': 'a&b=c%d',
    });
    const byOddMetadata = await Sandbox.list({
      ...connection(),
      query: { metadata: { 'with space': 'a&b=c%d' } },
    }).nextItems();
    expect(byOddMetadata.map((item) => item.sandboxId)).toEqual([second.sandboxId]);

    const paginator = Sandbox.list({
      ...connection(),
      query: { metadata: { suite }, state: ['running'] },
      limit: 1,
    });
    const first = await paginator.nextItems();
    expect(first).toHaveLength(1);
    expect(paginator.hasNext).toBe(true);
    expect(paginator.nextToken).toBeTruthy();
    const next = await paginator.nextItems();
    expect(next).toHaveLength(1);
    expect(paginator.hasNext).toBe(false);
    expect([first[0]!.sandboxId, next[0]!.sandboxId].sort()).toEqual(ids);
    // Newest first, as E2B orders.
    expect(first[0]!.sandboxId).toBe(second.sandboxId);
    const paused = await Sandbox.list({
      ...connection(),
      query: { metadata: { suite }, state: ['paused'] },
    }).nextItems();
    expect(paused).toEqual([]);
  });

  it('ends a sandbox at its timeout: killed by default, paused with onTimeout pause', async () => {
    const short = await Sandbox.create('base', {
      ...connection(),
      timeoutMs: 1_000,
      metadata: { suite: `${suite}-short` },
    });
    const pausing = await Sandbox.create('base', {
      ...connection(),
      timeoutMs: 1_000,
      lifecycle: { onTimeout: 'pause' },
      metadata: { suite: `${suite}-short` },
    });
    expect((await pausing.getInfo()).lifecycle).toEqual({ onTimeout: 'pause', autoResume: false });
    let states: string[] = [];
    for (let attempt = 0; attempt < 50; attempt++) {
      await sleep(200);
      const listed = await Sandbox.list({
        ...connection(),
        query: { metadata: { suite: `${suite}-short` } },
      }).nextItems();
      states = listed.map(
        (item) => `${item.sandboxId === short.sandboxId ? 'short' : 'pausing'}:${item.state}`,
      );
      if (states.length === 1 && states[0] === 'pausing:paused') break;
    }
    expect(states).toEqual(['pausing:paused']);
    expect(await rejection(() => Sandbox.getInfo(short.sandboxId, connection()))).toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await Sandbox.kill(pausing.sandboxId, connection())).toBe(true);
  });

  it('sets the timeout, pauses (twice: false), and resumes on connect with files intact', async () => {
    await sandbox.files.write('/root/state.txt', 'before pause');
    const background = await sandbox.commands.run('sleep 120', { background: true, timeoutMs: 0 });
    await sandbox.setTimeout(60_000);
    const info = await sandbox.getInfo();
    expect(Math.abs(info.endAt.getTime() - (Date.now() + 60_000))).toBeLessThan(5_000);
    expect(await sandbox.pause()).toBe(true);
    expect(await sandbox.pause()).toBe(false);
    expect((await sandbox.getInfo()).state).toBe('paused');
    expect(await sandbox.isRunning()).toBe(false);
    const resumed = await Sandbox.connect(sandbox.sandboxId, { ...connection(), timeoutMs: 120_000 });
    expect((await resumed.getInfo()).state).toBe('running');
    expect(await resumed.files.read('/root/state.txt')).toBe('before pause');
    // docker pause freezes processes; they carry on after the resume.
    expect((await resumed.commands.list()).some((process) => process.pid === background.pid)).toBe(true);
    await resumed.commands.kill(background.pid);
    // Connecting to a running sandbox only extends its end.
    const before = (await resumed.getInfo()).endAt.getTime();
    await Sandbox.connect(sandbox.sandboxId, { ...connection(), timeoutMs: 5_000 });
    expect((await resumed.getInfo()).endAt.getTime()).toBe(before);
  });

  it('reports unknown sandboxes, unknown templates and refused API keys as the SDK expects', async () => {
    expect(await rejection(() => Sandbox.getInfo('no-such-sandbox', connection()))).toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await rejection(() => Sandbox.connect('no-such-sandbox', connection()))).toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await rejection(() => Sandbox.setTimeout('no-such-sandbox', 1_000, connection()))).toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await Sandbox.kill('no-such-sandbox', connection())).toBe(false);
    const template = await rejection(() => Sandbox.create('no-such-template', connection()));
    expect(template).toBeInstanceOf(SandboxError);
    expect(String(template)).toMatch(/404: template 'no-such-template' not found/);

    const guarded = await startE2BEmulator({ apiKeys: ['right-key'], instance: suite });
    try {
      const as = (apiKey: string) => ({ apiKey, apiUrl: guarded.apiUrl, sandboxUrl: guarded.sandboxUrl });
      expect(await rejection(() => Sandbox.list(as('wrong-key')).nextItems())).toBeInstanceOf(
        AuthenticationError,
      );
      expect(await rejection(() => Sandbox.create('base', as('wrong-key')))).toBeInstanceOf(
        AuthenticationError,
      );
      expect(await Sandbox.list(as('right-key')).nextItems()).toBeInstanceOf(Array);
      expect(guarded.env.E2B_API_KEY).toBe('right-key');
    } finally {
      await guarded.close();
    }
  });

  it('survives an emulator restart: sandboxes, their state and files are found again', async () => {
    await sandbox.files.write('/root/restart.txt', 'survives');
    expect(await second.pause()).toBe(true);
    const before = await sandbox.getInfo();
    await emulator!.close();
    await emulator!.close();
    emulator = await startE2BEmulator({ keepaliveMs: 200, instance: suite });
    const paused = await Sandbox.list({
      ...connection(),
      query: { metadata: { suite }, state: ['paused'] },
    }).nextItems();
    expect(paused.map((item) => item.sandboxId)).toEqual([second.sandboxId]);
    const again = await Sandbox.connect(sandbox.sandboxId, connection());
    expect(await again.files.read('/root/restart.txt')).toBe('survives');
    const after = await again.getInfo();
    expect(after).toMatchObject({
      metadata: before.metadata,
      startedAt: before.startedAt,
      templateId: 'base',
    });
    expect((await again.commands.run('echo alive')).stdout).toBe('alive\n');
    const resumed = await Sandbox.connect(second.sandboxId, connection());
    expect((await resumed.getInfo()).state).toBe('running');
    // The SDK objects hold the old emulator's URL; go on with ones bound to the new one.
    sandbox = again;
    second = resumed;
  });

  it('kills sandboxes; killing one again returns false', async () => {
    expect(await sandbox.kill()).toBe(true);
    expect(await sandbox.kill()).toBe(false);
    expect(await Sandbox.kill(second.sandboxId, connection())).toBe(true);
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${E2B_LABELS.metadataPrefix}suite=${suite}`] },
    });
    expect(left).toEqual([]);
    expect(await rejection(() => sandbox.commands.run('true'))).toBeInstanceOf(Error);
  });
});

describe.skipIf(problem !== undefined)('an emulator started with network: false', () => {
  it('gives its sandboxes no network but their own loopback, and they still run commands', async () => {
    const instance = `${suite}-nonet`;
    const offline = await startE2BEmulator({ instance, network: false });
    try {
      const box = await Sandbox.create('base', {
        apiKey: offline.env.E2B_API_KEY!,
        apiUrl: offline.apiUrl,
        sandboxUrl: offline.sandboxUrl,
      });
      const [summary] = await docker.listContainers({
        filters: { label: [`${E2B_LABELS.sandboxId}=${box.sandboxId}`] },
      });
      const info = await docker.getContainer(summary!.Id).inspect();
      expect((info.Config as { NetworkDisabled?: boolean }).NetworkDisabled).toBe(true);
      const devices = await box.commands.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
      expect(devices.stdout.trim().split('\n')).toEqual(['lo']);
      expect((await box.commands.run('cat /sys/class/net/lo/flags')).stdout.trim()).toBe('0x9');
    } finally {
      await offline.close();
      await removeEmulatorSandboxes(docker, { instance });
    }
  });
});

describe.skipIf(problem !== undefined)('E2B emulator: what it lacks, its limits, and closing', () => {
  /** An emulator of its own instance, closed and cleaned up after `body`. */
  async function withEmulator(
    name: string,
    options: Parameters<typeof startE2BEmulator>[0],
    body: (
      started: E2BEmulator,
      opts: { apiKey: string; apiUrl: string; sandboxUrl: string },
    ) => Promise<void>,
  ): Promise<void> {
    const instance = `${suite}-${name}`;
    const started = await startE2BEmulator({ ...options, instance });
    try {
      await body(started, {
        apiKey: started.env.E2B_API_KEY!,
        apiUrl: started.apiUrl,
        sandboxUrl: started.sandboxUrl,
      });
    } finally {
      await started.close();
      await removeEmulatorSandboxes(docker, { instance });
    }
  }

  it('reports the requests it does not implement', async () => {
    await withEmulator('unimpl', {}, async (started, opts) => {
      const response = await fetch(`${started.apiUrl}/v2/templates?limit=1`, {
        headers: { 'x-api-key': opts.apiKey },
      });
      expect(response.status).toBe(404);
      const box = await Sandbox.create('base', opts);
      // envd's WatchDir is not emulated: the SDK's call fails, and the emulator says so.
      await rejection(() => box.files.watchDir('/tmp', () => {}));
      expect(started.unimplemented).toEqual(['GET /v2/templates', 'rpc filesystem.Filesystem/WatchDir']);
    });
  });

  it("answers as E2B's API and envd do: list limit, unknown sandbox, missing download", async () => {
    await withEmulator('answers', {}, async (started, opts) => {
      const headers = { 'x-api-key': opts.apiKey };
      const tooMany = await fetch(`${started.apiUrl}/v2/sandboxes?limit=101`, { headers });
      expect(tooMany.status).toBe(400);
      const unknown = await fetch(`${started.apiUrl}/sandboxes/nope`, { headers });
      expect(await unknown.json()).toEqual({
        code: 404,
        message: `Sandbox "nope" doesn't exist or you don't have access to it`,
      });
      const box = await Sandbox.create('base', opts);
      const missing = await fetch(`${started.apiUrl}/files?path=/no/such/file`, {
        headers: {
          'e2b-sandbox-id': box.sandboxId,
          'x-access-token': await accessTokenOf(started, opts.apiKey, box.sandboxId),
        },
      });
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ code: 404, message: "path '/no/such/file' does not exist" });
      expect(await rejection(() => box.files.read('/no/such/file'))).toBeInstanceOf(FileNotFoundError);
    });
  });

  it('completes a kill and a pause it accepted though it is closed at once', async () => {
    const instance = `${suite}-closing`;
    const started = await startE2BEmulator({ instance });
    const opts = { apiKey: started.env.E2B_API_KEY!, apiUrl: started.apiUrl, sandboxUrl: started.sandboxUrl };
    try {
      const killed = await Sandbox.create('base', opts);
      const paused = await Sandbox.create('base', opts);
      expect(await Sandbox.kill(killed.sandboxId, opts)).toBe(true);
      // Its answer is lost with the connection; the pause itself must still happen.
      const pausing = Sandbox.pause(paused.sandboxId, opts).catch(() => false);
      // The pause is accepted (its request is in) before the emulator closes.
      await sleep(30);
      await started.close();
      await pausing;
      const left = await docker.listContainers({
        all: true,
        filters: { label: [`${E2B_LABELS.sandboxId}=${killed.sandboxId}`] },
      });
      expect(left).toEqual([]);
      const [kept] = await docker.listContainers({
        all: true,
        filters: { label: [`${E2B_LABELS.sandboxId}=${paused.sandboxId}`] },
      });
      expect(kept?.State).toBe('paused');
    } finally {
      await started.close();
      await removeEmulatorSandboxes(docker, { instance });
    }
  });

  it('refuses a timeout beyond the maximum length, and cuts a longer set-timeout to it', async () => {
    await withEmulator('timeout', { limits: { timeoutMaxMs: 120_000 } }, async (_started, opts) => {
      const refused = await rejection(() => Sandbox.create('base', { ...opts, timeoutMs: 180_000 }));
      expect(refused).toBeInstanceOf(SandboxError);
      expect(String(refused)).toMatch(/400: Timeout cannot be greater than 0\.0333+ hours/);
      expect(String(await rejection(() => Sandbox.create('base', { ...opts, timeoutMs: 0 })))).toMatch(
        /400: Timeout must be greater than 0/,
      );
      const box = await Sandbox.create('base', { ...opts, timeoutMs: 60_000 });
      await box.setTimeout(600_000);
      const info = await box.getInfo();
      expect(info.endAt.getTime() - info.startedAt.getTime()).toBeLessThanOrEqual(120_000);
      expect(
        String(await rejection(() => Sandbox.connect(box.sandboxId, { ...opts, timeoutMs: 600_000 }))),
      ).toMatch(/Timeout cannot be greater than/);
      // A paused sandbox is not in the API's store of running ones: setting its timeout finds nothing.
      expect(await box.pause()).toBe(true);
      expect(await rejection(() => box.setTimeout(30_000))).toBeInstanceOf(SandboxNotFoundError);
    });
  });

  it('refuses a sandbox beyond the running ones allowed with 429, also on resume', async () => {
    await withEmulator('concurrency', { limits: { sandboxes: 1 } }, async (_started, opts) => {
      const first = await Sandbox.create('base', opts);
      const refused = await rejection(() => Sandbox.create('base', opts));
      expect(refused).toBeInstanceOf(RateLimitError);
      expect(String(refused)).toMatch(/maximum number of concurrent E2B sandboxes \(1\)/);
      expect(await first.pause()).toBe(true);
      const second = await Sandbox.create('base', opts);
      expect(await rejection(() => Sandbox.connect(first.sandboxId, opts))).toBeInstanceOf(RateLimitError);
      await second.kill();
      expect((await Sandbox.connect(first.sandboxId, opts)).sandboxId).toBe(first.sandboxId);
    });
  });

  it('rate-limits the API per key with 429 and Retry-After, and refuses a body over its size', async () => {
    await withEmulator(
      'rate',
      { limits: { apiRequestsPer30s: 2, apiRequestBytes: 2048 } },
      async (started, opts) => {
        const list = () => fetch(`${started.apiUrl}/v2/sandboxes`, { headers: { 'x-api-key': opts.apiKey } });
        expect((await list()).status).toBe(200);
        expect((await list()).status).toBe(200);
        const limited = await list();
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(await limited.json()).toEqual({ code: 429, message: 'Rate limit exceeded' });
        expect(await rejection(() => Sandbox.list({ ...opts, retries: 0 }).nextItems())).toBeInstanceOf(
          RateLimitError,
        );
        // Another key has its own budget.
        const big = await fetch(`${started.apiUrl}/v2/sandboxes`, {
          method: 'POST',
          headers: { 'x-api-key': 'another-key', 'content-type': 'application/json' },
          body: JSON.stringify({ templateID: 'base', metadata: { filler: 'x'.repeat(4096) } }),
        });
        expect(big.status).toBe(413);
        expect(await big.text()).toBe('request too large');
      },
    );
  });
});
