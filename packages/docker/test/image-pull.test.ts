// A missing image is pulled at the opening, with progress: against a real registry (Debian's
// docker-registry) served on loopback, holding a busybox image pushed to it by the real engine.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError, type WorkspaceEvent } from '@ws/core';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '../src/index.js';

const engineProblem = await dockerProblem(process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE);
const toolProblem =
  engineProblem ??
  (!existsSync('/usr/bin/docker-registry') && !commandExists('docker-registry')
    ? "docker-registry is missing (Debian's docker-registry package)"
    : !existsSync('/bin/busybox')
      ? "/bin/busybox is missing (Debian's busybox-static package)"
      : !commandExists('docker')
        ? 'the docker CLI is missing'
        : undefined);
const problem = requireEngine('docker', toolProblem);
if (problem) console.warn(`[image-pull] skipped: ${problem}`);

function commandExists(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const docker = new Docker();
const owner = `ws-test-${generateId().slice(0, 8)}`;
const base = mkdtempSync(join(tmpdir(), 'ws-image-pull-'));
let registry: ChildProcess | undefined;
let reference = '';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

async function waitForRegistry(port: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v2/`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return;
    } catch {}
    if (Date.now() > deadline) throw new Error('the registry did not answer in 15 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** An image of busybox alone (a few MB): `sh` and the tools a workspace needs, no node. */
function busyboxRoot(dir: string): void {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  for (const folder of ['tmp', 'etc', 'root', 'workspace']) mkdirSync(join(dir, folder), { recursive: true });
  copyFileSync('/bin/busybox', join(dir, 'bin', 'busybox'));
  const applets = execFileSync('/bin/busybox', ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const applet of applets) if (applet !== 'busybox') symlinkSync('busybox', join(dir, 'bin', applet));
  writeFileSync(
    join(dir, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n',
  );
  writeFileSync(join(dir, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
}

function removeImage(name: string): void {
  try {
    execFileSync('docker', ['rmi', '-f', name], { stdio: 'ignore' });
  } catch {}
}

beforeAll(async () => {
  if (problem) return;
  const port = await freePort();
  const storage = join(base, 'storage');
  mkdirSync(storage);
  const config = join(base, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${storage}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  registry = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  await waitForRegistry(port);
  reference = `127.0.0.1:${port}/ws-pull-test:${owner}`;
  const root = join(base, 'root');
  busyboxRoot(root);
  execFileSync('sh', ['-c', `tar -C "$1" -c . | docker import - "$2"`, 'sh', root, reference], {
    stdio: 'ignore',
  });
  execFileSync('docker', ['push', reference], { stdio: 'ignore' });
  // The engine now lacks it: only the registry has it.
  removeImage(reference);
}, 120_000);

afterAll(async () => {
  if (!problem) await removeOwnedContainers(owner, docker).catch(() => {});
  if (reference) removeImage(reference);
  registry?.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

describe.skipIf(problem !== undefined)('a DockerWorkspace whose image the engine lacks', () => {
  it('pulls it at the opening, telling the progress, and runs', async () => {
    const events: WorkspaceEvent[] = [];
    const workspace = await DockerWorkspace.open({
      image: reference,
      owner,
      onEvent: (event) => events.push(event),
    });
    try {
      const result = await workspace.getSandbox().exec(['sh', '-c', 'echo pulled-and-running']);
      expect(result.stdoutText).toBe('pulled-and-running\n');
    } finally {
      await workspace.destroy();
    }
    const progress = events.filter((event) => event.type === 'image.progress');
    expect(progress[0]).toMatchObject({ image: reference, progress: `pulling ${reference}`, level: 'info' });
    expect(progress.at(-1)).toMatchObject({ progress: `pulled ${reference}` });
    // The engine's own steps in between (a layer pulled, the digest, the status).
    expect(progress.length).toBeGreaterThan(2);
    const types = events.map((event) => event.type);
    expect(types.indexOf('image.progress')).toBeLessThan(types.indexOf('sandbox.created'));
    expect(await docker.getImage(reference).inspect()).toBeTruthy();
  }, 120_000);

  it('with pull: never, or where nothing can be pulled, fails in one line saying how to build it', async () => {
    const missing = `${reference}-absent`;
    const never = await DockerWorkspace.open({ image: missing, owner, pull: 'never' }).catch(
      (error) => error,
    );
    expect(isWsError(never, 'BACKEND_UNAVAILABLE')).toBe(true);
    expect(never.message).toContain(`The image ${missing} is not in the Docker engine (pull: 'never')`);
    expect(never.message).toContain('npx ws-docker-image --tag');

    // Nothing listens on the registry port this names.
    const nowhere = `127.0.0.1:${await freePort()}/ws-pull-test:absent`;
    const failed = await DockerWorkspace.open({ image: nowhere, owner }).catch((error) => error);
    expect(isWsError(failed, 'BACKEND_UNAVAILABLE')).toBe(true);
    expect(failed.message).toContain(
      `The image ${nowhere} is not in the Docker engine and pulling ${nowhere} failed (`,
    );
    expect(failed.message).toContain('npx ws-docker-image --tag');
    expect(failed.message).not.toContain('\n');
  }, 60_000);
});
