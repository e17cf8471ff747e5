import { randomBytes } from 'node:crypto';
import {
  Daytona,
  DaytonaAuthenticationError,
  DaytonaError,
  DaytonaNotFoundError,
  DaytonaRateLimitError,
  DaytonaTimeoutError,
  type Sandbox,
} from '@daytonaio/sdk';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAYTONA_LABELS,
  type DaytonaEmulator,
  removeDaytonaEmulatorSandboxes,
  startDaytonaEmulator,
} from '../src/index.js';
import { dockerProblem } from './engine-check.js';

// The whole file drives the unmodified @daytonaio/sdk against emulators of its own instances; sandboxes
// are real containers of the image behind the `default` snapshot.
const image = 'ws-workspace:bookworm';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[daytona-sdk] skipped: ${problem}`);

const docker = new Docker();
const suite = `dsdk-${randomBytes(4).toString('hex')}`;
const apiKey = `key-${randomBytes(6).toString('hex')}`;
const requests: string[] = [];
let emulator: DaytonaEmulator | undefined;
let daytona: Daytona;
let sandbox: Sandbox;
const others: Daytona[] = [];

/** A client that polls `GET /sandbox/{id}` (the main one, `daytona`, follows the socket.io events). */
function client(options: { apiKey?: string; apiUrl?: string } = {}): Daytona {
  const created = new Daytona({
    apiKey: options.apiKey ?? apiKey,
    apiUrl: options.apiUrl ?? emulator!.apiUrl,
    useDeprecatedPolling: true,
  });
  others.push(created);
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

async function containerOf(sandboxId: string): Promise<Docker.ContainerInspectInfo> {
  const [summary] = await docker.listContainers({
    all: true,
    filters: { label: [`${DAYTONA_LABELS.sandboxId}=${sandboxId}`] },
  });
  if (!summary) throw new Error(`no container for sandbox ${sandboxId}`);
  return docker.getContainer(summary.Id).inspect();
}

async function exists(sandboxId: string): Promise<boolean> {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${DAYTONA_LABELS.sandboxId}=${sandboxId}`] },
  });
  return containers.length > 0;
}

beforeAll(async () => {
  if (problem) return;
  emulator = await startDaytonaEmulator({
    instance: suite,
    apiKeys: [apiKey],
    onLog: (line) => void requests.push(line),
  });
  daytona = new Daytona({ apiKey, apiUrl: emulator.apiUrl });
  others.push(daytona);
});

afterAll(async () => {
  for (const each of others) await each[Symbol.asyncDispose]();
  await emulator?.close();
  if (!problem) {
    await removeDaytonaEmulatorSandboxes(docker, { instance: suite });
    await removeDaytonaEmulatorSandboxes(docker, { instance: `${suite}-auto` });
    await removeDaytonaEmulatorSandboxes(docker, { instance: `${suite}-closing` });
  }
});

describe.skipIf(problem !== undefined)('Daytona emulator driven by @daytonaio/sdk', () => {
  it('creates a sandbox with labels and env vars, waiting until it has started', async () => {
    sandbox = await daytona.create({
      labels: { suite, role: 'main' },
      envVars: { GREETING: 'hello' },
      autoStopInterval: 0,
    });
    expect(sandbox).toMatchObject({
      state: 'started',
      user: 'daytona',
      snapshot: 'default',
      env: { GREETING: 'hello' },
      labels: { suite, role: 'main', 'code-toolbox-language': 'python' },
      autoStopInterval: 0,
      toolboxProxyUrl: emulator!.toolboxUrl,
    });
    // The create answer came while the sandbox was still `creating`; the SDK waited, woken by an event
    // of its socket.io stream, until it had started.
    const answered = requests.findIndex((line) => line.startsWith('POST /api/sandbox 200'));
    const ready = requests.indexOf(`daytona: sandbox ${sandbox.id} is started`);
    expect(answered).toBeGreaterThanOrEqual(0);
    expect(ready).toBeGreaterThan(answered);
    expect(requests.some((line) => line.startsWith('GET /api/socket.io/?'))).toBe(true);
    const container = await containerOf(sandbox.id);
    expect(container.State.Running).toBe(true);
    expect(container.Config.Image).toBe(image);
    expect(container.HostConfig.CapDrop).toEqual(['ALL']);
    expect(await sandbox.getUserHomeDir()).toBe('/home/daytona');
    expect(await sandbox.getWorkDir()).toBe('/home/daytona');
  });

  it('gets a sandbox by id and by name; an unknown one is DaytonaNotFoundError', async () => {
    expect((await daytona.get(sandbox.id)).labels).toMatchObject({ role: 'main' });
    expect((await daytona.get(sandbox.name)).id).toBe(sandbox.id);
    const error = await rejection(() => daytona.get('no-such-sandbox'));
    expect(error).toBeInstanceOf(DaytonaNotFoundError);
    expect(error).toMatchObject({ statusCode: 404 });
  });

  it('refuses a wrong key with DaytonaAuthenticationError, and an unknown snapshot', async () => {
    const error = await rejection(() => client({ apiKey: 'wrong' }).get(sandbox.id));
    expect(error).toBeInstanceOf(DaytonaAuthenticationError);
    expect(error).toMatchObject({ statusCode: 401 });
    const snapshot = await rejection(() =>
      daytona.create({ snapshot: 'no-such-snapshot', labels: { suite } }),
    );
    expect(snapshot).toBeInstanceOf(DaytonaNotFoundError);
    expect((snapshot as Error).message).toContain('no-such-snapshot');
  });

  it('lists sandboxes by labels (a JSON filter), a page at a time', async () => {
    const paged = await Promise.all(
      [1, 2, 3].map((index) =>
        daytona.create({ labels: { suite, group: 'paged', index: String(index) }, autoStopInterval: 0 }),
      ),
    );
    const seen: string[] = [];
    for await (const listed of daytona.list({ labels: { suite, group: 'paged' }, limit: 2 }))
      seen.push(listed.id);
    expect(seen.sort()).toEqual(paged.map((each) => each.id).sort());
    expect(requests.some((line) => /^GET \/api\/sandbox\?cursor=/.test(line))).toBe(true);
    const none: string[] = [];
    for await (const listed of daytona.list({ labels: { suite, group: 'none' } })) none.push(listed.id);
    expect(none).toEqual([]);
    await Promise.all(paged.map((each) => each.delete()));
  });

  it('executes commands: combined output, exit code, cwd, env, and a timeout that kills', async () => {
    const result = await sandbox.process.executeCommand(
      'echo "$GREETING $CALLER"; echo oops >&2; pwd; id -un; exit 3',
      undefined,
      {
        CALLER: 'sdk',
      },
    );
    expect(result.exitCode).toBe(3);
    expect(result.result).toBe('hello sdk\noops\n/home/daytona\ndaytona\n');
    expect((await sandbox.process.executeCommand('pwd', '/tmp')).result).toBe('/tmp\n');
    expect((await sandbox.process.executeCommand("printf '%s' 'it'\"'\"'s'")).result).toBe("it's");
    const timeout = await rejection(() =>
      sandbox.process.executeCommand('sleep 77 & sleep 78; echo never', undefined, undefined, 1),
    );
    expect(timeout).toBeInstanceOf(DaytonaTimeoutError);
    expect(timeout).toMatchObject({ statusCode: 408 });
    const left = await sandbox.process.executeCommand("ps -eo args= | grep -c '^sleep 7[78]' || true");
    expect(left.result.trim()).toBe('0');
    // The daemon answers a command that could not start (a missing cwd) as exit code -1, not an error.
    expect(await sandbox.process.executeCommand('pwd', '/no/such/dir')).toMatchObject({
      exitCode: -1,
      result: 'chdir /no/such/dir: no such file or directory',
    });
  });

  it('keeps state in sessions: cd and exports persist, stdout and stderr apart', async () => {
    await sandbox.process.createSession('main');
    await sandbox.process.executeSessionCommand('main', {
      command: 'mkdir -p /tmp/s && cd /tmp/s && export MARK=kept',
    });
    const result = await sandbox.process.executeSessionCommand('main', {
      command: 'pwd; echo "$MARK"; echo warn >&2; false',
    });
    expect(result).toMatchObject({ exitCode: 1, stdout: '/tmp/s\nkept\n', stderr: 'warn\n' });
    const listed = await sandbox.process.getSession('main');
    expect(listed.commands.map((command) => command.exitCode)).toEqual([0, 1]);
    expect((await sandbox.process.listSessions()).map((session) => session.sessionId)).toContain('main');
    const syntax = await sandbox.process.executeSessionCommand('main', { command: 'if then' });
    expect(syntax.exitCode).not.toBe(0);
    expect((await sandbox.process.executeSessionCommand('main', { command: 'echo alive' })).stdout).toBe(
      'alive\n',
    );
  });

  it('runs async session commands: logs streamed over the WebSocket, input sent while it runs', async () => {
    const started = await sandbox.process.executeSessionCommand('main', {
      command: 'read name; echo "hi $name"; sleep 0.3; echo done >&2; exit 0',
      runAsync: true,
    });
    expect(started.exitCode).toBeUndefined();
    const cmdId = started.cmdId!;
    expect((await sandbox.process.getSessionCommand('main', cmdId)).exitCode).toBeUndefined();
    await sandbox.process.sendSessionCommandInput('main', cmdId, 'daytona\n');
    const stdout: string[] = [];
    const stderr: string[] = [];
    await sandbox.process.getSessionCommandLogs(
      'main',
      cmdId,
      (chunk) => void stdout.push(chunk),
      (chunk) => void stderr.push(chunk),
    );
    expect(stdout.join('')).toBe('hi daytona\n');
    expect(stderr.join('')).toBe('done\n');
    expect(await sandbox.process.getSessionCommand('main', cmdId)).toMatchObject({ id: cmdId, exitCode: 0 });
    expect(await sandbox.process.getSessionCommandLogs('main', cmdId)).toEqual({
      output: expect.stringContaining('hi daytona\n'),
      stdout: 'hi daytona\n',
      stderr: 'done\n',
    });
    // `exit 0` ended the session's shell: it takes no more commands, and input to a done command fails.
    expect(
      await rejection(() => sandbox.process.sendSessionCommandInput('main', cmdId, 'late\n')),
    ).toBeInstanceOf(DaytonaError);
    expect(
      await rejection(() => sandbox.process.executeSessionCommand('main', { command: 'true' })),
    ).toBeInstanceOf(DaytonaError);
    await sandbox.process.createSession('other one/2');
    const long = await sandbox.process.executeSessionCommand('other one/2', {
      command: 'sleep 79',
      runAsync: true,
    });
    await sandbox.process.deleteSession('other one/2');
    expect(await rejection(() => sandbox.process.getSession('other one/2'))).toBeInstanceOf(
      DaytonaNotFoundError,
    );
    expect(long.cmdId).toBeTruthy();
    const left = await sandbox.process.executeCommand("ps -eo args= | grep -c '^sleep 79' || true");
    expect(left.result.trim()).toBe('0');
  });

  it('uploads and downloads files byte for byte; a missing file is DaytonaNotFoundError', async () => {
    const bytes = Buffer.from(Array.from({ length: 256 * 64 }, (_, index) => index % 256));
    await sandbox.fs.uploadFile(bytes, 'data/all-bytes.bin');
    expect((await sandbox.fs.downloadFile('/home/daytona/data/all-bytes.bin')).equals(bytes)).toBe(true);
    const names = ['with space.txt', `quote"and'apostrophe.txt`, 'new\nline.txt', 'ünïcødé.txt'];
    await sandbox.fs.uploadFiles(
      names.map((name) => ({ source: Buffer.from(`content of ${name}`), destination: `odd/${name}` })),
    );
    for (const name of names) {
      expect((await sandbox.fs.downloadFile(`odd/${name}`)).toString()).toBe(`content of ${name}`);
    }
    expect((await sandbox.fs.listFiles('odd')).map((file) => file.name).sort()).toEqual([...names].sort());
    const missing = await rejection(() => sandbox.fs.downloadFile('data/missing.bin'));
    expect(missing).toBeInstanceOf(DaytonaNotFoundError);
    // `../` stays inside the sandbox: it resolves from the home directory like any relative path.
    await sandbox.fs.uploadFile(Buffer.from('escaped?'), '../../tmp/dots.txt');
    expect((await sandbox.process.executeCommand('cat /tmp/dots.txt')).result).toBe('escaped?');
    // An upload replaces a file whole; onto a directory it fails and leaves the directory.
    await sandbox.fs.uploadFile(Buffer.from('short'), 'data/all-bytes.bin');
    expect((await sandbox.fs.downloadFile('data/all-bytes.bin')).toString()).toBe('short');
    expect(await rejection(() => sandbox.fs.uploadFile(Buffer.from('x'), 'data'))).toBeInstanceOf(
      DaytonaError,
    );
    expect((await sandbox.fs.getFileDetails('data')).isDir).toBe(true);
    expect((await sandbox.process.executeCommand('ls -A data')).result).toBe('all-bytes.bin\n');
  });

  it('lists, inspects, creates, moves and deletes files and folders', async () => {
    await sandbox.fs.createFolder('tree/sub', '750');
    const folder = await sandbox.fs.getFileDetails('tree/sub');
    expect(folder).toMatchObject({
      name: 'sub',
      isDir: true,
      owner: 'daytona',
      permissions: '0750',
      mode: 'drwxr-x---',
    });
    await sandbox.fs.uploadFile(Buffer.from('12345'), 'tree/sub/file.txt');
    expect(await sandbox.fs.getFileDetails('tree/sub/file.txt')).toMatchObject({
      name: 'file.txt',
      isDir: false,
      size: 5,
    });
    expect((await sandbox.fs.listFiles('tree')).map((file) => [file.name, file.isDir])).toEqual([
      ['sub', true],
    ]);
    await sandbox.fs.moveFiles('tree/sub/file.txt', 'tree/moved.txt');
    expect((await sandbox.fs.listFiles('tree')).map((file) => file.name).sort()).toEqual([
      'moved.txt',
      'sub',
    ]);
    expect(await rejection(() => sandbox.fs.moveFiles('tree/nothing', 'tree/x'))).toBeInstanceOf(
      DaytonaNotFoundError,
    );
    await sandbox.fs.uploadFile(Buffer.from('x'), 'tree/sub/inner.txt');
    expect(await rejection(() => sandbox.fs.deleteFile('tree/sub'))).toBeInstanceOf(DaytonaError);
    await sandbox.fs.deleteFile('tree/sub', true);
    await sandbox.fs.deleteFile('tree/moved.txt');
    expect(await sandbox.fs.listFiles('tree')).toEqual([]);
    expect(await rejection(() => sandbox.fs.getFileDetails('tree/moved.txt'))).toBeInstanceOf(
      DaytonaNotFoundError,
    );
    await sandbox.fs.setFilePermissions('tree', { mode: '700' });
    expect((await sandbox.fs.getFileDetails('tree')).permissions).toBe('0700');
  });

  it('finds text in files, searches names, and replaces text', async () => {
    await sandbox.fs.uploadFiles([
      { source: Buffer.from('alpha\nneedle one\nomega\n'), destination: 'search/a.txt' },
      { source: Buffer.from('needle two\n'), destination: 'search/deeper/b.md' },
      { source: Buffer.from('nothing here\n'), destination: 'search/c.txt' },
    ]);
    const matches = await sandbox.fs.findFiles('search', 'needle');
    expect(matches.sort((a, b) => a.file.localeCompare(b.file))).toEqual([
      { file: '/home/daytona/search/a.txt', line: 2, content: 'needle one' },
      { file: '/home/daytona/search/deeper/b.md', line: 1, content: 'needle two' },
    ]);
    const found = await sandbox.fs.searchFiles('search', '*.txt');
    expect(found.files.sort()).toEqual(['/home/daytona/search/a.txt', '/home/daytona/search/c.txt']);
    const replaced = await sandbox.fs.replaceInFiles(
      ['search/a.txt', 'search/deeper/b.md', 'search/none.txt'],
      'needle',
      'pin',
    );
    expect(replaced.map((result) => [result.file, result.success])).toEqual([
      ['search/a.txt', true],
      ['search/deeper/b.md', true],
      ['search/none.txt', false],
    ]);
    expect((await sandbox.fs.downloadFile('search/a.txt')).toString()).toBe('alpha\npin one\nomega\n');
  });

  it('stops (the container really stops), starts, archives and starts again, keeping files', async () => {
    await sandbox.fs.uploadFile(Buffer.from('persisted'), 'keep.txt');
    await sandbox.stop();
    expect(sandbox.state).toBe('stopped');
    expect((await containerOf(sandbox.id)).State.Running).toBe(false);
    const refused = await rejection(() => sandbox.process.executeCommand('true'));
    expect(refused).toBeInstanceOf(DaytonaError);
    expect((refused as Error).message).toMatch(/not started/);
    await sandbox.start();
    expect(sandbox.state).toBe('started');
    expect((await containerOf(sandbox.id)).State.Running).toBe(true);
    expect((await sandbox.fs.downloadFile('keep.txt')).toString()).toBe('persisted');
    await sandbox.stop();
    await sandbox.archive();
    // archive() does not wait: the state goes from archiving to archived a moment later.
    expect(['archiving', 'archived']).toContain(sandbox.state);
    for (let attempt = 0; attempt < 50 && sandbox.state !== 'archived'; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sandbox.refreshData();
    }
    expect(sandbox.state).toBe('archived');
    expect((await containerOf(sandbox.id)).State.Running).toBe(false);
    await sandbox.start();
    expect(sandbox.state).toBe('started');
    expect((await sandbox.process.executeCommand('cat keep.txt')).result).toBe('persisted');
  });

  it('changes labels and intervals; an idle sandbox stops by itself after its auto-stop interval', async () => {
    expect(await sandbox.setLabels({ suite, role: 'relabelled' })).toEqual({ suite, role: 'relabelled' });
    expect((await daytona.get(sandbox.id)).labels).toEqual({ suite, role: 'relabelled' });
    await sandbox.setAutostopInterval(30);
    expect((await daytona.get(sandbox.id)).autoStopInterval).toBe(30);
    await sandbox.setAutostopInterval(0);
    // A minute lasts 300 ms on this emulator.
    const fast = await startDaytonaEmulator({ instance: `${suite}-auto`, minuteMs: 300, transitionMs: 50 });
    try {
      const quick = client({ apiUrl: fast.apiUrl });
      const idle = await quick.create({ labels: { suite }, autoStopInterval: 1 });
      await idle.process.executeCommand('true');
      // Idle for 300 ms, it stops (50 ms of transition); a busy machine may take a little longer.
      for (let waited = 0; waited < 15_000; waited += 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await idle.refreshData();
        if (idle.state === 'stopped') break;
      }
      expect(idle.state).toBe('stopped');
      expect((await containerOf(idle.id)).State.Running).toBe(false);
    } finally {
      await fast.close();
    }
  });

  it('survives an emulator restart; an emulator of another instance leaves the sandbox alone', async () => {
    const again = await startDaytonaEmulator({ instance: suite });
    const stranger = await startDaytonaEmulator({ instance: `${suite}-other` });
    try {
      const found = await client({ apiUrl: again.apiUrl }).get(sandbox.id);
      expect(found).toMatchObject({ state: 'started', labels: { suite, role: 'relabelled' } });
      expect((await found.process.executeCommand('cat keep.txt')).result).toBe('persisted');
      expect(await rejection(() => client({ apiUrl: stranger.apiUrl }).get(sandbox.id))).toBeInstanceOf(
        DaytonaNotFoundError,
      );
    } finally {
      await again.close();
      await stranger.close();
    }
  });

  it('reports the requests it does not implement, and answers them 404', async () => {
    const headers = { authorization: `Bearer ${apiKey}` };
    const api = await fetch(`${emulator!.apiUrl}/snapshots?page=1`, { headers });
    expect(api.status).toBe(404);
    const toolbox = await fetch(`${emulator!.toolboxUrl}/${sandbox.id}/git/status?path=.`, { headers });
    expect(toolbox.status).toBe(404);
    expect(emulator!.unimplemented).toEqual(
      expect.arrayContaining(['GET /api/snapshots', `GET /toolbox/${sandbox.id}/git/status`]),
    );
  });

  it('answers as the API does: list items without env, intervals with the sandbox, errors with path and time', async () => {
    const headers = { authorization: `Bearer ${apiKey}` };
    const page = (await (await fetch(`${emulator!.apiUrl}/sandbox?limit=200`, { headers })).json()) as {
      items: Record<string, unknown>[];
      nextCursor: string | null;
    };
    const item = page.items.find((each) => each.id === sandbox.id);
    expect(item).toMatchObject({ id: sandbox.id, toolboxProxyUrl: emulator!.toolboxUrl });
    expect(item).not.toHaveProperty('env');
    expect(Object.keys(page).sort()).toEqual(['items', 'nextCursor']);
    const interval = await fetch(`${emulator!.apiUrl}/sandbox/${sandbox.id}/autoarchive/0`, {
      method: 'POST',
      headers,
    });
    // 0 asks for the longest auto-archive interval, 30 days; the route is a POST Nest answers 201.
    expect(interval.status).toBe(201);
    expect(await interval.json()).toMatchObject({ id: sandbox.id, autoArchiveInterval: 43_200 });
    const missing = await fetch(`${emulator!.apiUrl}/sandbox/no-such-sandbox?x=1`, { headers });
    const body = (await missing.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      statusCode: 404,
      error: 'Not Found',
      path: '/api/sandbox/no-such-sandbox?x=1',
    });
    expect(Number.isNaN(Date.parse(String(body.timestamp)))).toBe(false);
  });

  it("answers with the daemon's status codes: sessions 201/202/204, bulk uploads listing what they wrote", async () => {
    const headers = { authorization: `Bearer ${apiKey}` };
    const toolbox = `${emulator!.toolboxUrl}/${sandbox.id}`;
    const post = (path: string, body: unknown) =>
      fetch(`${toolbox}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post('/process/session', { sessionId: 'codes' })).status).toBe(201);
    const started = await post('/process/session/codes/exec', {
      command: 'read line; echo "$line"',
      runAsync: true,
    });
    expect(started.status).toBe(202);
    const { cmdId } = (await started.json()) as { cmdId: string };
    expect((await post(`/process/session/codes/command/${cmdId}/input`, { data: 'in\n' })).status).toBe(204);
    const deleted = await fetch(`${toolbox}/process/session/codes`, { method: 'DELETE', headers });
    expect(deleted.status).toBe(204);
    const form = new FormData();
    form.append('files[0].path', 'bulk/one.txt');
    form.append('files[0].file', new Blob(['four']), 'bulk/one.txt');
    form.append('files[1].file', new Blob(['orphan']), 'bulk/two.txt');
    const uploaded = await fetch(`${toolbox}/files/bulk-upload`, { method: 'POST', headers, body: form });
    expect(uploaded.status).toBe(400);
    expect(await uploaded.json()).toEqual({
      errors: ['file[1]: missing .path metadata'],
      files: [{ path: 'bulk/one.txt', bytes: 4 }],
    });
    expect((await sandbox.fs.downloadFile('bulk/one.txt')).toString()).toBe('four');
    expect(await rejection(() => sandbox.fs.downloadFile('bulk'))).toMatchObject({
      statusCode: 400,
      code: 'INVALID_FILE_PATH',
    });
    const activity = await fetch(`${emulator!.apiUrl}/sandbox/${sandbox.id}/last-activity`, {
      method: 'POST',
      headers,
    });
    expect(activity.status).toBe(201);
  });

  it('refuses lifecycle changes the API refuses: stopping a stopped sandbox, archiving an archived one, deleting one twice', async () => {
    const other = await daytona.create({ labels: { suite } }, { timeout: 60 });
    await other.stop();
    expect(await rejection(() => other.stop())).toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/not in a stoppable state/),
    });
    await other.archive();
    // Archiving: another change is refused with 409 until it is archived.
    expect(await rejection(() => other.archive())).toMatchObject({ statusCode: 409 });
    while (other.state !== 'archived') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await other.refreshData();
    }
    expect(await rejection(() => other.archive())).toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/not stopped/),
    });
    await other.delete();
    expect(await rejection(() => other.delete())).toMatchObject({ statusCode: 409 });
  });

  it('enforces the per-sandbox quota (400) and the creation rate limit (429 with Retry-After-sandbox-create)', async () => {
    const limited = await startDaytonaEmulator({
      instance: `${suite}-closing`,
      limits: { cpuPerSandbox: 1, sandboxCreatesPerWindow: 1 },
    });
    try {
      const sdk = client({ apiUrl: limited.apiUrl });
      const big = await rejection(() => sdk.create({ image: image, resources: { cpu: 2 } }, { timeout: 30 }));
      expect(big).toMatchObject({ statusCode: 400 });
      expect(String((big as Error).message)).toMatch(
        /CPU request 2 exceeds maximum allowed per sandbox \(1\)/,
      );
      const throttled = await rejection(() => sdk.create({}, { timeout: 30 }));
      expect(throttled).toBeInstanceOf(DaytonaRateLimitError);
      const retryAfter = (throttled as DaytonaRateLimitError).headers?.get('retry-after-sandbox-create');
      expect(Number(retryAfter)).toBeGreaterThan(0);
      expect(limited.unimplemented).toEqual([]);
    } finally {
      await limited.close();
    }
  });

  it('completes a deletion it accepted though it is closed at once: no container is left', async () => {
    const closing = await startDaytonaEmulator({ instance: `${suite}-closing`, transitionMs: 1_000 });
    const sdk = new Daytona({ apiKey: closing.apiKey, apiUrl: closing.apiUrl, useDeprecatedPolling: true });
    let doomed: Sandbox;
    try {
      doomed = await sdk.create({ labels: { suite } }, { timeout: 60 });
      expect(await exists(doomed.id)).toBe(true);
      await doomed.delete(); // answered at once, while the sandbox is still destroying
    } finally {
      await sdk[Symbol.asyncDispose]();
    }
    await closing.close();
    expect(await exists(doomed.id)).toBe(false);
  });

  it('deletes a sandbox: its container goes, and it is not found any more', async () => {
    await sandbox.delete(60, true);
    expect(await exists(sandbox.id)).toBe(false);
    expect(await rejection(() => daytona.get(sandbox.id))).toBeInstanceOf(DaytonaNotFoundError);
  });
});
