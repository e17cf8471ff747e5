import { randomBytes } from 'node:crypto';
import { ConnectionConfig, Sandbox, SandboxApiException, SandboxManager } from '@alibaba-group/opensandbox';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OPENSANDBOX_LABELS,
  type OpenSandboxEmulator,
  removeOpenSandboxEmulatorSandboxes,
  startOpenSandboxEmulator,
} from '../src/opensandbox/opensandbox-emulator.js';
import { dockerProblem } from './engine-check.js';

// The whole file drives the unmodified @alibaba-group/opensandbox SDK against an emulator of its own
// instance; sandboxes are real containers of the workspace image (image URI `workspace` maps to it).
const image = 'ws-workspace:bookworm';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[opensandbox-sdk] skipped: ${problem}`);

const docker = new Docker();
const suite = `ossdk-${randomBytes(4).toString('hex')}`;
const apiKey = `key-${randomBytes(6).toString('hex')}`;
const requests: string[] = [];
let emulator: OpenSandboxEmulator | undefined;
let sandbox: Sandbox;
const closables: { close(): Promise<void> }[] = [];

function connection(options: { apiKey?: string } = {}): ConnectionConfig {
  return new ConnectionConfig({ domain: emulator!.url, apiKey: options.apiKey ?? apiKey });
}

function manager(): SandboxManager {
  const created = SandboxManager.create({ connectionConfig: connection() });
  closables.push(created);
  return created;
}

async function rejection(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function containerOf(sandboxId: string): Promise<Docker.ContainerInspectInfo | undefined> {
  const [summary] = await docker.listContainers({
    all: true,
    filters: { label: [`${OPENSANDBOX_LABELS.sandboxId}=${sandboxId}`] },
  });
  return summary ? docker.getContainer(summary.Id).inspect() : undefined;
}

async function create(metadata: Record<string, string> = {}): Promise<Sandbox> {
  const created = await Sandbox.create({
    image: 'workspace',
    connectionConfig: connection(),
    metadata: { suite, ...metadata },
    env: { GREETING: 'hello world' },
  });
  closables.push(created);
  return created;
}

beforeAll(async () => {
  if (problem) return;
  emulator = await startOpenSandboxEmulator({
    instance: suite,
    apiKeys: [apiKey],
    images: { workspace: image },
    onLog: (line) => void requests.push(line),
    // The expiry case waits for a sandbox of two seconds, shorter than the server's minimum of 60.
    limits: { timeoutMinSeconds: 1 },
  });
});

afterAll(async () => {
  for (const each of closables) await each.close().catch(() => {});
  await emulator?.close();
  if (!problem) await removeOpenSandboxEmulatorSandboxes(docker, { instance: suite });
});

describe.skipIf(problem !== undefined)('OpenSandbox emulator driven by @alibaba-group/opensandbox', () => {
  it('creates a sandbox with metadata and env (Pending → Running, the SDK pings execd until ready)', async () => {
    sandbox = await create({ role: 'main' });
    const answered = requests.findIndex((line) => line.startsWith('POST /v1/sandboxes 202'));
    const running = requests.indexOf(`opensandbox: sandbox ${sandbox.id} is Running`);
    expect(answered).toBeGreaterThanOrEqual(0);
    expect(running).toBeGreaterThan(answered);
    // The SDK asked for execd's endpoint, then pinged it: refused while Pending, then answered.
    expect(requests.some((line) => line.startsWith(`GET /v1/sandboxes/${sandbox.id}/endpoints/44772`))).toBe(
      true,
    );
    expect(requests.some((line) => line.startsWith(`GET /execd/${sandbox.id}/ping 503`))).toBe(true);
    expect(requests.some((line) => line.startsWith(`GET /execd/${sandbox.id}/ping 200`))).toBe(true);
    // The SDK reports the create latency without waiting for the answer.
    await expect
      .poll(() => requests.some((line) => line.startsWith('POST /v1/metrics/events 204')))
      .toBe(true);
    const container = await containerOf(sandbox.id);
    expect(container?.State.Running).toBe(true);
    expect(container?.Config.Image).toBe(image);
    expect(container?.Config.Entrypoint).toEqual(['tail', '-f', '/dev/null']);
    expect(container?.HostConfig.CapDrop).toEqual(['ALL']);
    expect(container?.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(container?.Config.Labels?.[OPENSANDBOX_LABELS.instance]).toBe(suite);
    const endpoint = await sandbox.getEndpoint(44772);
    expect(endpoint.endpoint).toBe(`${emulator!.url.slice('http://'.length)}/execd/${sandbox.id}`);
  });

  it('gets the info of a sandbox', async () => {
    const info = await sandbox.getInfo();
    expect(info).toMatchObject({
      id: sandbox.id,
      status: { state: 'Running' },
      metadata: { suite, role: 'main' },
      entrypoint: ['tail', '-f', '/dev/null'],
      image: { uri: 'workspace' },
    });
    expect(info.createdAt).toBeInstanceOf(Date);
    expect(info.expiresAt!.getTime() - info.createdAt.getTime()).toBe(600_000);
  });

  it('runs commands: stdout and stderr apart, exit codes, cwd, env', async () => {
    const ok = await sandbox.commands.run('echo out; echo err >&2; echo "$GREETING/$EXTRA"; pwd', {
      envs: { EXTRA: 'x y' },
      workingDirectory: '/tmp',
    });
    expect(ok.exitCode).toBe(0);
    expect(ok.error).toBeUndefined();
    expect(ok.logs.stdout.map((message) => message.text).join('')).toBe('out\nhello world/x y\n/tmp\n');
    expect(ok.logs.stderr.map((message) => message.text).join('')).toBe('err\n');
    expect(ok.id).toMatch(/[0-9a-f-]{36}/);
    const failed = await sandbox.commands.run('echo partial; exit 3');
    expect(failed.exitCode).toBe(3);
    expect(failed.complete).toBeUndefined();
    expect(failed.error).toMatchObject({
      name: 'CommandExecError',
      value: '3',
      traceback: ['exit status 3'],
    });
    expect(failed.logs.stdout.map((message) => message.text).join('')).toBe('partial\n');
    const bashism = await sandbox.commands.run('[[ 1 == 1 ]] && echo "$BASH_VERSINFO"');
    expect(Number(bashism.logs.stdout[0]?.text)).toBeGreaterThanOrEqual(4);
    const missing = await sandbox.commands.run('pwd', { workingDirectory: '/no/such dir' });
    expect(missing.exitCode).toBeNull();
    expect(missing.error?.value).toContain('/no/such dir');
    const other = await sandbox.commands.run('id -u; id -g', { uid: 1234, gid: 2345 });
    expect(other.logs.stdout.map((message) => message.text).join('')).toBe('1234\n2345\n');
    const rootless = await sandbox.commands.run('id -u; grep CapEff /proc/self/status');
    expect(rootless.logs.stdout.map((message) => message.text).join('')).toMatch(/^0\nCapEff:\s+0+\n$/);
  });

  it('kills a command at its timeout, process group included', async () => {
    const started = Date.now();
    const result = await sandbox.commands.run('sleep 300 & sleep 301; echo never', { timeoutSeconds: 1 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.error).toMatchObject({
      name: 'CommandExecError',
      value: '-1',
      traceback: ['signal: killed'],
    });
    expect(result.exitCode).toBe(-1);
    const left = await sandbox.commands.run('ps -eo args | grep -c "^sleep 30[01]" || true');
    expect(left.logs.stdout[0]?.text.trim()).toBe('0');
  });

  it('kills the process group of a command whose client goes away', async () => {
    // The SDK's own signal stops counting once the response head is in (its fetch wrapper detaches it),
    // so the client that goes away mid-stream is a plain fetch here.
    const abort = new AbortController();
    const response = await fetch(`${emulator!.url}/execd/${sandbox.id}/command`, {
      method: 'POST',
      headers: { 'open-sandbox-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'sleep 302 & sleep 303', background: false }),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(JSON.parse(first.split('\n\n')[0]!)).toMatchObject({ type: 'init' });
    const count = async () =>
      (
        await sandbox.commands.run('ps -eo args | grep -c "^sleep 30[23]" || true')
      ).logs.stdout[0]?.text.trim();
    await expect.poll(count).toBe('2');
    abort.abort();
    await expect.poll(count).toBe('0');
  });

  it('streams ping events every 3 s while a command is quiet, as bare JSON objects', async () => {
    const response = await fetch(`${emulator!.url}/execd/${sandbox.id}/command`, {
      method: 'POST',
      headers: { 'open-sandbox-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'sleep 3.5; echo done', background: false }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const text = await response.text();
    expect(text.endsWith('\n\n')).toBe(true);
    const events = text
      .split('\n\n')
      .filter((part) => part !== '')
      .map((part) => JSON.parse(part) as { type: string; text?: string; timestamp: number });
    expect(events.map((event) => event.type)).toEqual(['init', 'ping', 'stdout', 'execution_complete']);
    expect(events[1]).toMatchObject({ text: 'pong' });
    expect(typeof events[0]?.timestamp).toBe('number');
  });

  it('runs background commands with status, logs from a cursor and interrupt', async () => {
    const started = await sandbox.commands.run('echo one; sleep 0.5; echo two >&2; exit 4', {
      background: true,
    });
    expect(started.id).toBeTruthy();
    const id = started.id!;
    let status = await sandbox.commands.getCommandStatus(id);
    expect(status).toMatchObject({ id, content: 'echo one; sleep 0.5; echo two >&2; exit 4' });
    for (let attempt = 0; status.running && attempt < 50; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await sandbox.commands.getCommandStatus(id);
    }
    expect(status).toMatchObject({ running: false, exitCode: 4 });
    expect(status.finishedAt).toBeInstanceOf(Date);
    const logs = await sandbox.commands.getBackgroundCommandLogs(id);
    expect(logs).toEqual({ content: 'one\ntwo\n', cursor: 8 });
    expect(await sandbox.commands.getBackgroundCommandLogs(id, 4)).toEqual({ content: 'two\n', cursor: 8 });
    const long = await sandbox.commands.run('sleep 300', { background: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sandbox.commands.interrupt(long.id!);
    await expect.poll(async () => (await sandbox.commands.getCommandStatus(long.id!)).running).toBe(false);
    const unknown = await rejection(() => sandbox.commands.getCommandStatus('no-such-command'));
    expect(unknown).toMatchObject({ statusCode: 404 });
  });

  it('proxies a port inside the sandbox at the endpoint the SDK hands out: requests, streamed answers, upgrades', async () => {
    // A server inside: echoes the request, streams an answer in two parts, and takes any upgrade.
    const server = `const http=require('http');const s=http.createServer((q,r)=>{let b='';q.on('data',d=>b+=d);q.on('end',()=>{if(q.url.startsWith('/stream')){r.write('first;');setTimeout(()=>r.end('second'),400);return}r.setHeader('x-seen',q.headers['x-extra']||'');r.end(q.method+' '+q.url+' '+b)})});s.on('upgrade',(q,k)=>{k.write('HTTP/1.1 101 Switching Protocols\\r\\nConnection: Upgrade\\r\\nUpgrade: '+q.headers.upgrade+'\\r\\n\\r\\n');k.pipe(k)});s.listen(7071,'127.0.0.1')`;
    await sandbox.commands.run(`node -e "${server}"`, { background: true });
    const url = await sandbox.getEndpointUrl(7071);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/execd\/[^/]+\/proxy\/7071$/);
    const headers = { 'OPEN-SANDBOX-API-KEY': apiKey, 'x-extra': 'kept' };
    let answer: Response | undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      answer = await fetch(`${url}/echo/path?q=1`, { method: 'POST', body: 'payload', headers });
      if (answer.status !== 502) break;
      await answer.text();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(answer?.status).toBe(200);
    expect(answer?.headers.get('x-seen')).toBe('kept');
    expect(await answer?.text()).toBe('POST /echo/path?q=1 payload');

    const streamed = await fetch(`${url}/stream`, { headers });
    const reader = (streamed.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? []).toString()).toBe('first;');
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read())
      rest += Buffer.from(next.value).toString();
    expect(rest).toBe('second');

    const { request } = await import('node:http');
    const echoed = await new Promise<string>((resolve, reject) => {
      const asked = request(`${url}/tunnel`, {
        headers: { ...headers, connection: 'Upgrade', upgrade: 'echo-protocol' },
      });
      asked.on('upgrade', (response, socket) => {
        expect(response.headers.upgrade).toBe('echo-protocol');
        socket.once('data', (chunk) => {
          socket.destroy();
          resolve(chunk.toString());
        });
        socket.write('round trip');
      });
      asked.on('response', (response) => reject(new Error(`no upgrade: ${response.statusCode}`)));
      asked.on('error', reject);
      asked.end();
    });
    expect(echoed).toBe('round trip');

    const closed = await fetch(`${await sandbox.getEndpointUrl(7999)}/`, { headers });
    expect(closed.status).toBe(502);
    await closed.text();
    const unauthorized = await fetch(`${url}/`, { headers: { 'x-extra': 'no key' } });
    expect(unauthorized.status).toBe(401);
    await unauthorized.text();
    await sandbox.commands.run('pkill -f "listen\\(7071" || true');
  });

  it('keeps cwd and exported variables across the commands of a session', async () => {
    const session = await sandbox.commands.createSession({ workingDirectory: '/tmp' });
    await sandbox.commands.runInSession(session, 'mkdir -p s1 && cd s1 && export KEPT=yes');
    const next = await sandbox.commands.runInSession(session, 'pwd; echo "$KEPT"');
    expect(next.logs.stdout.map((message) => message.text).join('')).toBe('/tmp/s1\nyes\n');
    // Commands of one session queue up behind each other.
    const slowRun = sandbox.commands.runInSession(session, 'sleep 1; echo slow > order');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [slow, fast] = await Promise.all([slowRun, sandbox.commands.runInSession(session, 'cat order')]);
    expect(slow.exitCode).toBe(0);
    expect(fast.logs.stdout.map((message) => message.text).join('')).toBe('slow\n');
    const failed = await sandbox.commands.runInSession(session, 'false');
    expect(failed.exitCode).toBe(1);
    await sandbox.commands.deleteSession(session);
    const gone = await rejection(() => sandbox.commands.runInSession(session, 'true'));
    expect(gone).toMatchObject({ statusCode: 404 });
  });

  it('uploads and downloads files binary-safe, with hostile names, modes and ranges', async () => {
    const bytes = new Uint8Array(70_000).map((_, index) => (index * 7 + 3) % 256);
    const odd = `/tmp/up/it's a "file"\nwith newline.bin`;
    await sandbox.files.writeFiles([
      { path: odd, data: bytes, mode: 600 },
      { path: '/tmp/up/text.txt', data: 'héllo wörld\n' },
    ]);
    expect(await sandbox.files.readBytes(odd)).toEqual(bytes);
    expect(await sandbox.files.readFile('/tmp/up/text.txt')).toBe('héllo wörld\n');
    expect(await sandbox.files.readBytes(odd, { range: 'bytes=10-19' })).toEqual(bytes.slice(10, 20));
    const info = await sandbox.files.getFileInfo([odd, '/tmp/up']);
    expect(info[odd]).toMatchObject({ path: odd, type: 'file', size: 70_000, mode: 600, owner: 'root' });
    expect(info[odd]?.modifiedAt).toBeInstanceOf(Date);
    expect(info['/tmp/up']).toMatchObject({ type: 'directory' });
    // No upload leftovers, and a relative escape stays a plain path operation.
    const listing = await sandbox.files.listDirectory({ path: '/tmp/up', depth: 1 });
    expect(listing.map((entry) => entry.path)).toEqual([odd, '/tmp/up/text.txt']);
    const missing = await rejection(() => sandbox.files.readBytes('/tmp/up/../up/none'));
    expect(missing).toBeInstanceOf(SandboxApiException);
    expect(missing).toMatchObject({ statusCode: 404 });
    const infoMissing = await rejection(() => sandbox.files.getFileInfo(['/no/such/file']));
    expect(infoMissing).toMatchObject({ statusCode: 404, error: { code: 'FILE_NOT_FOUND' } });
  });

  it('leaves a file as it was when its upload breaks off', async () => {
    await sandbox.files.writeFiles([{ path: '/tmp/atomic.txt', data: 'original' }]);
    const boundary = 'ws-test-boundary';
    const body = [
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"; filename="metadata"\r\n`,
      `Content-Type: application/json\r\n\r\n${JSON.stringify({ path: '/tmp/atomic.txt' })}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="atomic.txt"\r\n\r\n`,
      'replacement that never ends',
    ].join('');
    const response = await fetch(`${emulator!.url}/execd/${sandbox.id}/files/upload`, {
      method: 'POST',
      headers: {
        'open-sandbox-api-key': apiKey,
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(await sandbox.files.readFile('/tmp/atomic.txt')).toBe('original');
    const listing = await sandbox.files.listDirectory({ path: '/tmp', depth: 1 });
    expect(listing.filter((entry) => entry.path.includes('.ws-upload.'))).toEqual([]);
  });

  it('makes, lists, moves, searches, replaces in and deletes files and directories', async () => {
    await sandbox.files.createDirectories([{ path: '/tmp/tree/a b/c', mode: 700 }]);
    await sandbox.files.writeFiles([
      { path: '/tmp/tree/a b/one.txt', data: 'alpha beta alpha\n' },
      { path: '/tmp/tree/a b/c/two.md', data: 'gamma\n' },
    ]);
    const deep = await sandbox.files.listDirectory({ path: '/tmp/tree', depth: 3 });
    expect(deep.map((entry) => [entry.path, entry.type])).toEqual([
      ['/tmp/tree/a b', 'directory'],
      ['/tmp/tree/a b/c', 'directory'],
      ['/tmp/tree/a b/c/two.md', 'file'],
      ['/tmp/tree/a b/one.txt', 'file'],
    ]);
    expect(deep[1]?.mode).toBe(700);
    const found = await sandbox.files.search({ path: '/tmp/tree', pattern: '*.txt' });
    expect(found.map((entry) => entry.path)).toEqual(['/tmp/tree/a b/one.txt']);
    const replaced = await sandbox.files.replaceContentsDetailed([
      { path: '/tmp/tree/a b/one.txt', oldContent: 'alpha', newContent: 'omega' },
    ]);
    expect(replaced).toEqual([{ path: '/tmp/tree/a b/one.txt', replacedCount: 2 }]);
    expect(await sandbox.files.readFile('/tmp/tree/a b/one.txt')).toBe('omega beta omega\n');
    await sandbox.files.moveFiles([{ src: '/tmp/tree/a b/one.txt', dest: '/tmp/tree/moved/one.txt' }]);
    expect(await sandbox.files.readFile('/tmp/tree/moved/one.txt')).toBe('omega beta omega\n');
    await sandbox.files.setPermissions([{ path: '/tmp/tree/moved/one.txt', mode: 640 }]);
    expect(
      (await sandbox.files.getFileInfo(['/tmp/tree/moved/one.txt']))['/tmp/tree/moved/one.txt']?.mode,
    ).toBe(640);
    await sandbox.files.deleteFiles(['/tmp/tree/moved/one.txt']);
    await sandbox.files.deleteDirectories(['/tmp/tree/a b']);
    const left = await sandbox.files.listDirectory({ path: '/tmp/tree', depth: 5 });
    expect(left.map((entry) => entry.path)).toEqual(['/tmp/tree/moved']);
    const notDir = await rejection(() => sandbox.files.deleteFiles(['/tmp/tree/moved']));
    expect(notDir).toMatchObject({ statusCode: 400 });
  });

  it('lists sandboxes by metadata and state, with paging', async () => {
    const second = await create({ role: 'second' });
    const sandboxes = manager();
    const all = await sandboxes.listSandboxInfos({ metadata: { suite }, pageSize: 1 });
    expect(all.pagination).toEqual({
      page: 0 + 1,
      pageSize: 1,
      totalItems: 2,
      totalPages: 2,
      hasNextPage: true,
    });
    expect(all.items.map((item) => item.id)).toEqual([second.id]); // newest first
    const page2 = await sandboxes.listSandboxInfos({ metadata: { suite }, pageSize: 1, page: 2 });
    expect(page2.items.map((item) => item.id)).toEqual([sandbox.id]);
    expect(page2.pagination?.hasNextPage).toBe(false);
    const main = await sandboxes.listSandboxInfos({ metadata: { suite, role: 'main' }, states: ['Running'] });
    expect(main.items.map((item) => item.id)).toEqual([sandbox.id]);
    const paused = await sandboxes.listSandboxInfos({ metadata: { suite }, states: ['Paused'] });
    expect(paused.items).toEqual([]);
    await second.kill();
    expect(await containerOf(second.id)).toBeUndefined();
    const gone = await rejection(() => sandboxes.getSandboxInfo(second.id));
    expect(gone).toMatchObject({ statusCode: 404, error: { code: 'DOCKER::SANDBOX_NOT_FOUND' } });
  });

  it('pauses (the container is frozen) and resumes with files intact', async () => {
    await sandbox.files.writeFiles([{ path: '/tmp/keep.txt', data: 'kept' }]);
    await sandbox.pause();
    expect((await sandbox.getInfo()).status.state).toBe('Pausing');
    const sandboxes = manager();
    await expect.poll(async () => (await sandboxes.getSandboxInfo(sandbox.id)).status.state).toBe('Paused');
    expect((await containerOf(sandbox.id))?.State.Paused).toBe(true);
    expect(await sandbox.isHealthy()).toBe(false);
    const twice = await rejection(() => sandboxes.resumeSandbox('no-such-sandbox'));
    expect(twice).toMatchObject({ statusCode: 404 });
    const resumed = await sandbox.resume();
    closables.push(resumed);
    expect((await resumed.getInfo()).status.state).toBe('Running');
    expect((await containerOf(sandbox.id))?.State.Paused).toBe(false);
    expect(await resumed.files.readFile('/tmp/keep.txt')).toBe('kept');
    const again = await rejection(() => sandboxes.resumeSandbox(sandbox.id));
    expect(again).toMatchObject({ statusCode: 409, error: { code: 'DOCKER::SANDBOX_NOT_PAUSED' } });
    sandbox = resumed;
  });

  it('renews the expiry and patches metadata', async () => {
    const renewed = await sandbox.renew(3600);
    expect(renewed.expiresAt!.getTime() - Date.now()).toBeGreaterThan(3_590_000);
    expect((await sandbox.getInfo()).expiresAt?.getTime()).toBe(renewed.expiresAt?.getTime());
    const patched = await sandbox.patchMetadata({ role: null, stage: 'two' } as Record<
      string,
      string | null
    >);
    expect(patched.metadata).toEqual({ suite, stage: 'two' });
    const past = await rejection(() => manager().renewSandbox(sandbox.id, -10));
    expect(past).toMatchObject({ statusCode: 400, error: { code: 'DOCKER::INVALID_EXPIRATION' } });
  });

  it('answers 404 for an unknown sandbox and 401 for a bad key, on the lifecycle API and on execd', async () => {
    const unknown = await rejection(() => manager().getSandboxInfo('no-such-sandbox'));
    expect(unknown).toBeInstanceOf(SandboxApiException);
    expect(unknown).toMatchObject({ statusCode: 404, error: { code: 'DOCKER::SANDBOX_NOT_FOUND' } });
    expect((unknown as SandboxApiException).requestId).toBeTruthy();
    const bad = SandboxManager.create({ connectionConfig: connection({ apiKey: 'wrong' }) });
    closables.push(bad);
    expect(await rejection(() => bad.listSandboxInfos())).toMatchObject({
      statusCode: 401,
      error: { code: 'UNAUTHORIZED' },
    });
    const execd = await fetch(`${emulator!.url}/execd/${sandbox.id}/ping`, {
      headers: { 'open-sandbox-api-key': 'wrong' },
    });
    expect(execd.status).toBe(401);
    expect(await execd.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    const image = await rejection(() =>
      Sandbox.create({ image: 'no-such-image:never', connectionConfig: connection(), metadata: { suite } }),
    );
    expect(image).toMatchObject({ statusCode: 400, error: { code: 'IMAGE_NOT_FOUND' } });
  });

  it('fails a sandbox whose entrypoint ends at once; the SDK times out waiting and deletes it', async () => {
    const error = await rejection(() =>
      Sandbox.create({
        image: 'workspace',
        entrypoint: ['sh', '-c', 'exit 7'],
        connectionConfig: connection(),
        metadata: { suite, role: 'broken' },
        readyTimeoutSeconds: 2,
      }),
    );
    expect(String(error)).toMatch(
      /health check timed out.*SANDBOX_NOT_RUNNING|Failed: the entrypoint exited with code 7/s,
    );
    const failed = requests.find((line) => line.includes('failed while Pending'));
    expect(failed).toContain('the entrypoint exited with code 7');
    const listed = await manager().listSandboxInfos({ metadata: { suite, role: 'broken' } });
    expect(listed.items).toEqual([]);
  });

  it('hands out an execd access token with secureAccess and requires it', async () => {
    const secure = await Sandbox.create({
      image: 'workspace',
      connectionConfig: connection(),
      metadata: { suite, role: 'secure' },
      secureAccess: true,
    });
    closables.push(secure);
    const endpoint = await secure.getEndpoint(44772);
    const token = endpoint.headers?.['X-EXECD-ACCESS-TOKEN'];
    expect(token).toMatch(/^[0-9a-f]{48}$/);
    expect((await secure.commands.run('echo secured')).logs.stdout[0]?.text).toBe('secured\n');
    const url = `${emulator!.url}/execd/${secure.id}/ping`;
    expect((await fetch(url, { headers: { 'open-sandbox-api-key': apiKey } })).status).toBe(401);
    const allowed = await fetch(url, {
      headers: { 'open-sandbox-api-key': apiKey, 'x-execd-access-token': token! },
    });
    expect(allowed.status).toBe(200);
    await secure.kill();
  });

  it('a restarted emulator of the same instance finds the sandbox, paused; another instance does not', async () => {
    await sandbox.pause();
    await expect.poll(async () => (await sandbox.getInfo()).status.state).toBe('Paused');
    // Metadata changed while paused is kept in the (frozen) container too.
    await sandbox.patchMetadata({ after: 'restart' });
    await emulator!.close();
    const other = await startOpenSandboxEmulator({ instance: `${suite}-other`, apiKeys: [apiKey] });
    try {
      const otherManager = SandboxManager.create({
        connectionConfig: new ConnectionConfig({ domain: other.url, apiKey }),
      });
      closables.push(otherManager);
      expect((await otherManager.listSandboxInfos({ metadata: { suite } })).items).toEqual([]);
    } finally {
      await other.close();
    }
    emulator = await startOpenSandboxEmulator({
      instance: suite,
      apiKeys: [apiKey],
      images: { workspace: image },
      onLog: (line) => void requests.push(line),
      limits: { timeoutMinSeconds: 1 },
    });
    const paused = await manager().listSandboxInfos({ metadata: { suite }, states: ['Paused'] });
    expect(paused.items.map((item) => item.id)).toEqual([sandbox.id]);
    const again = await Sandbox.resume({ sandboxId: sandbox.id, connectionConfig: connection() });
    closables.push(again);
    const info = await again.getInfo();
    expect(info).toMatchObject({
      status: { state: 'Running' },
      metadata: { suite, stage: 'two', after: 'restart' },
    });
    expect(await again.files.readFile('/tmp/keep.txt')).toBe('kept');
    sandbox = again;
  });

  it('terminates a sandbox past its expiry', async () => {
    // Not waiting for it to be ready: on a loaded machine, starting it can take longer than its
    // two seconds, and it would be gone before the SDK's health check saw it.
    const short = await Sandbox.create({
      image: 'workspace',
      connectionConfig: connection(),
      metadata: { suite, role: 'short' },
      timeoutSeconds: 2,
      skipHealthCheck: true,
    });
    closables.push(short);
    expect(short.id).toMatch(/\S/);
    await expect.poll(() => containerOf(short.id), { timeout: 30_000 }).toBeUndefined();
    expect(await rejection(() => short.getInfo())).toMatchObject({ statusCode: 404 });
  });

  it('kills a sandbox: the container is gone', async () => {
    await sandbox.kill();
    expect(await containerOf(sandbox.id)).toBeUndefined();
    expect(await rejection(() => sandbox.getInfo())).toMatchObject({ statusCode: 404 });
  });
});

describe.skipIf(problem !== undefined)(
  'OpenSandbox emulator: what it lacks, what it finishes, its limits',
  () => {
    /** An emulator of its own instance (`suffix`), closed and its containers removed after the case. */
    async function own(
      suffix: string,
      options: Parameters<typeof startOpenSandboxEmulator>[0] = {},
    ): Promise<{ emulator: OpenSandboxEmulator; config: ConnectionConfig; instance: string }> {
      const instance = `${suite}-${suffix}`;
      const started = await startOpenSandboxEmulator({
        instance,
        apiKeys: [apiKey],
        images: { workspace: image },
        ...options,
      });
      closables.push({
        close: async () => {
          await started.close();
          await removeOpenSandboxEmulatorSandboxes(docker, { instance });
        },
      });
      return { emulator: started, config: new ConnectionConfig({ domain: started.url, apiKey }), instance };
    }

    it('reports requests it does not implement, on the lifecycle API and on execd', async () => {
      const { emulator: mine, config } = await own('unimplemented');
      const headers = { 'open-sandbox-api-key': apiKey };
      const snapshots = await fetch(`${mine.url}/v1/snapshots`, { headers });
      expect(snapshots.status).toBe(404);
      const created = await Sandbox.create({
        image: 'workspace',
        connectionConfig: config,
        skipHealthCheck: true,
      });
      closables.push(created);
      await expect
        .poll(async () => (await created.getInfo()).status.state, { timeout: 20_000 })
        .toBe('Running');
      const code = await fetch(`${mine.url}/execd/${created.id}/code/contexts`, { headers });
      expect(code.status).toBe(404);
      expect(mine.unimplemented).toEqual(['GET /v1/snapshots', 'GET /execd/code/contexts']);
    });

    it('finishes an accepted pause and deletion before close() resolves', async () => {
      const first = await own('close', { transitionMs: 1_500 });
      const paused = await Sandbox.create({ image: 'workspace', connectionConfig: first.config });
      closables.push(paused);
      await paused.pause();
      // The pause was answered 202 and is under way: close() waits for it (its transition lasts 1.5 s).
      const began = Date.now();
      await first.emulator.close();
      expect(Date.now() - began).toBeGreaterThan(1_000);
      expect((await containerOf(paused.id))?.State.Paused).toBe(true);
      const second = await own('close');
      const sandboxes = SandboxManager.create({ connectionConfig: second.config });
      closables.push(sandboxes);
      await sandboxes.killSandbox(paused.id);
      await second.emulator.close();
      expect(await containerOf(paused.id)).toBeUndefined();
    });

    it('takes a 40 MB upload in one request, as execd does (no size limit)', async () => {
      const big = await create({ role: 'big' });
      const bytes = randomBytes(40 * 1024 * 1024);
      await big.files.writeFiles([{ path: '/tmp/big.bin', data: bytes }]);
      const sum = await big.commands.run('sha256sum /tmp/big.bin | cut -c1-64');
      const { createHash } = await import('node:crypto');
      expect(
        sum.logs.stdout
          .map((message) => message.text)
          .join('')
          .trim(),
      ).toBe(createHash('sha256').update(bytes).digest('hex'));
      await big.kill();
    }, 120_000);

    it('refuses metadata that is not a Kubernetes label, and renewing a sandbox that never expires', async () => {
      const { config } = await own('labels');
      const colon = await rejection(() =>
        Sandbox.create({
          image: 'workspace',
          connectionConfig: config,
          metadata: { created: '2026-12-03T10:00:00.000Z' },
          skipHealthCheck: true,
        }),
      );
      expect(colon).toMatchObject({ statusCode: 400, error: { code: 'SANDBOX::INVALID_METADATA_LABEL' } });
      const forever = await Sandbox.create({
        image: 'workspace',
        connectionConfig: config,
        timeoutSeconds: null,
        skipHealthCheck: true,
      });
      closables.push(forever);
      expect(await rejection(() => forever.renew(600))).toMatchObject({
        statusCode: 409,
        error: { code: 'DOCKER::INVALID_EXPIRATION' },
      });
      expect(await rejection(() => forever.patchMetadata({ 'opensandbox.io/id': 'x' }))).toMatchObject({
        statusCode: 400,
      });
    });

    it('enforces the timeout bounds, page size, process count, upload size and requests at once', async () => {
      const { emulator: mine, config } = await own('limits', {
        limits: {
          timeoutMaxSeconds: 120,
          pageSizeMax: 5,
          processesPerSandbox: 64,
          uploadBytes: 1024 * 1024,
          concurrentRequests: 3,
        },
      });
      const create = (timeoutSeconds: number) =>
        Sandbox.create({
          image: 'workspace',
          connectionConfig: config,
          timeoutSeconds,
          skipHealthCheck: true,
        });
      expect(await rejection(() => create(30))).toMatchObject({ statusCode: 422 });
      expect(await rejection(() => create(121))).toMatchObject({
        statusCode: 400,
        error: { code: 'SANDBOX::INVALID_PARAMETER' },
      });
      const sandboxes = SandboxManager.create({ connectionConfig: config });
      closables.push(sandboxes);
      expect(await rejection(() => sandboxes.listSandboxInfos({ pageSize: 6 }))).toMatchObject({
        statusCode: 422,
      });
      const limited = await create(120);
      closables.push(limited);
      await expect
        .poll(async () => (await limited.getInfo()).status.state, { timeout: 20_000 })
        .toBe('Running');
      expect((await containerOf(limited.id))?.HostConfig.PidsLimit).toBe(64);
      expect(
        await rejection(() =>
          limited.files.writeFiles([{ path: '/tmp/big.bin', data: randomBytes(2 << 20) }]),
        ),
      ).toMatchObject({ statusCode: 413 });
      await limited.files.writeFiles([{ path: '/tmp/small.bin', data: randomBytes(1000) }]);
      // Three commands under way take every place: the fourth request is refused at once.
      const endpoint = await limited.getEndpoint(44772);
      const held = [1, 2, 3].map(() =>
        fetch(`http://${endpoint.endpoint}/command`, {
          method: 'POST',
          headers: { 'open-sandbox-api-key': apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ command: 'sleep 2' }),
        }),
      );
      const streams = await Promise.all(held);
      const refused = await fetch(`${mine.url}/v1/sandboxes`, {
        headers: { 'open-sandbox-api-key': apiKey },
      });
      expect([refused.status, await refused.text()]).toEqual([503, 'Service Unavailable']);
      await Promise.all(streams.map((stream) => stream.text()));
      expect(
        (await fetch(`${mine.url}/v1/sandboxes`, { headers: { 'open-sandbox-api-key': apiKey } })).status,
      ).toBe(200);
    }, 60_000);
  },
);
