import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError } from '@ws/core';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDockerImage, debianNode, missingImageHint } from '../src/image-build.js';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[docker-image] skipped: ${problem}`);
const docker = new Docker();
const owner = `ws-test-${generateId().slice(0, 8)}`;
const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'image-cli.js');
const needsBin = () => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the packages first (npm test does)`);
};

// The real build needs what `--from debian` needs: root and debootstrap (and an engine).
const onPath = (command: string) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const buildProblem =
  problem ??
  requireEngine(
    'docker',
    (process.getuid?.() !== 0 ? 'not root (debootstrap needs root)' : undefined) ??
      (onPath('debootstrap') ? undefined : 'debootstrap is missing'),
  );
if (buildProblem) console.warn(`[docker-image build] skipped: ${buildProblem}`);

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
}, 120_000);

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('ws-docker-image bin', () => {
  it('ws-docker-image --help exits 0 with the usage', async () => {
    needsBin();
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: ws-docker-image [--tag TAG] [--from debian|dockerfile]');
    expect(stdout).toContain('--force');
  });

  it('ws-docker-image refuses a bad flag with a one-line message and a non-zero exit', async () => {
    needsBin();
    for (const args of [['--bogus'], ['--from', 'nowhere'], ['--tag']]) {
      const { code, stdout, stderr } = await run(args);
      expect(code, args.join(' ')).not.toBe(0);
      expect(stdout).toBe('');
      expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
      expect(stderr).toMatch(/^ws-docker-image: /);
      expect(stderr).not.toMatch(/\n\s+at /);
    }
    expect((await run(['--bogus'])).stderr).toContain('--bogus');
  });
});

describe.skipIf(problem !== undefined)('docker image', () => {
  it('ensureImage resolves at once on an image the engine has, building nothing', async () => {
    const lines: string[] = [];
    const started = Date.now();
    const result = await DockerWorkspace.ensureImage({
      image,
      onProgress: (line) => lines.push(line),
      client: docker,
    });
    expect(result).toMatchObject({ image, built: false });
    expect(result.sizeBytes).toBeGreaterThan(0);
    expect(lines).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('ensureImage refuses an unknown option and a bad source', async () => {
    const unknown = await DockerWorkspace.ensureImage({ tag: 'x' } as never).catch((error: unknown) => error);
    expect(isWsError(unknown, 'INVALID_ARGUMENT'), String(unknown)).toBe(true);
    const source = await DockerWorkspace.ensureImage({ from: 'apt' as never }).catch(
      (error: unknown) => error,
    );
    expect(isWsError(source, 'INVALID_ARGUMENT'), String(source)).toBe(true);
  });

  it('refuses a base on the debian build, a malformed node version, and a node the debian build cannot provide', async () => {
    const refused = (options: Parameters<typeof buildDockerImage>[0]) =>
      buildDockerImage({ client: docker, tag: 'ws-test-never:x', ...options }).then(
        () => undefined,
        (error: unknown) => error,
      );
    const base = await refused({ from: 'debian', base: 'ws-workspace:bookworm' });
    expect(isWsError(base, 'INVALID_ARGUMENT'), String(base)).toBe(true);
    expect((base as Error).message).toMatch(/debootstrap/);
    for (const nodeVersion of ['v20', '20.1.2', 'latest', ''])
      expect(isWsError(await refused({ nodeVersion }), 'INVALID_ARGUMENT'), nodeVersion).toBe(true);
    // Neither this host's node nor Debian bookworm's (18): the debian build names what it can provide.
    const host = process.version.replace(/^v/, '');
    const other = String(Number(host.split('.')[0]) === 99 ? 98 : 99);
    const node = await refused({ from: 'debian', nodeVersion: other });
    expect(isWsError(node, 'INVALID_ARGUMENT'), String(node)).toBe(true);
    expect((node as Error).message).toContain(`node ${host} (this host's`);
    expect((node as Error).message).toContain("18.19.0 (Debian bookworm's nodejs)");
    expect(debianNode(host.split('.')[0])).toBe(process.execPath);
    expect(debianNode('18')).toBe(Number(host.split('.')[0]) === 18 ? process.execPath : 'debian');
  });

  // Offline: the base is in the engine and has every tool, so apt-get does not run.
  it('--base builds FROM a local image; --node is checked against the base', async () => {
    needsBin();
    const tag = `ws-test-base-${generateId().slice(0, 8).toLowerCase()}:x`;
    const hostMajor = process.version.replace(/^v/, '').split('.')[0]!;
    const nodeOfImage = async (name: string) => {
      const container = await docker.createContainer({
        Image: name,
        Cmd: ['sh', '-c', 'node --version 2>/dev/null || echo none'],
      });
      try {
        const stream = await container.attach({ stream: true, stdout: true, stderr: true });
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        await container.start();
        await container.wait();
        return chunks
          .map((chunk) => chunk.subarray(8).toString())
          .join('')
          .trim();
      } finally {
        await container.remove({ force: true });
      }
    };
    try {
      const built = await run(['--tag', tag, '--base', image, '--node', hostMajor]);
      expect(built.code, built.stderr).toBe(0);
      expect(built.stderr).toContain(`FROM ${image}`);
      const info = await docker.getImage(tag).inspect();
      expect(info.Config.Labels?.['ws.image.fingerprint']).toMatch(/^[0-9a-f]{16}$/);
      expect(await nodeOfImage(tag)).toMatch(new RegExp(`^v${hostMajor}\\.`));
      expect(await nodeOfImage(`${tag.replace(/:x$/, ':x-bare')}`)).toBe('none');
      // The same options again: up to date, nothing built.
      const again = await run(['--tag', tag, '--base', image, '--node', hostMajor]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('is up to date');
      // A node the base does not have: the build fails, saying which it has.
      const wrong = await run(['--tag', tag, '--base', image, '--node', '17', '--force']);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr.trimEnd().split('\n').at(-1)).toMatch(
        new RegExp(
          `^ws-docker-image: docker build of .* failed: the base image has node v${hostMajor}\\.\\S+, not 17: `,
        ),
      );
    } finally {
      for (const name of [tag, tag.replace(/:x$/, ':x-bare')])
        await docker
          .getImage(name)
          .remove({ force: true })
          .catch(() => {});
    }
  }, 180_000);

  it('the missing-image error of opening a workspace names npx ws-docker-image', async () => {
    const absent = `ws-test-absent-${generateId().slice(0, 8).toLowerCase()}:none`;
    const error = await DockerWorkspace.open({ image: absent, owner, gateway: false }).catch(
      (failure: unknown) => failure,
    );
    expect(isWsError(error, 'BACKEND_UNAVAILABLE'), String(error)).toBe(true);
    expect((error as Error).message).toContain(`npx ws-docker-image --tag ${absent}`);
    expect((error as Error).message).toContain('DockerWorkspace.ensureImage(');
    expect(await dockerProblem(absent)).toContain('npx ws-docker-image');
    expect(missingImageHint(DEFAULT_DOCKER_IMAGE)).toContain('`npx ws-docker-image`');
  });
});

describe.skipIf(buildProblem !== undefined)('docker image build', () => {
  // About 35 s here, nearly all of it debootstrap fetching from Debian's mirror.
  it('ws-docker-image --from debian builds a throwaway tag and its -bare twin', async () => {
    needsBin();
    const tag = `ws-test-build-${generateId().slice(0, 8).toLowerCase()}:x`;
    try {
      const { code, stdout, stderr } = await run(['--from', 'debian', '--tag', tag]);
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(new RegExp(`^${tag} built in \\d+ s \\(\\d+ MB\\)\\n$`));
      expect(stderr).toMatch(/^\[\d+s\] debootstrap bookworm into /m);
      const tools = async (name: string) => {
        const container = await docker.createContainer({
          Image: name,
          Cmd: ['sh', '-c', 'for c in node rg tar bash; do command -v $c >/dev/null && echo $c; done'],
          Tty: true,
        });
        try {
          await container.start();
          await container.wait();
          const logs = await container.logs({ stdout: true });
          return logs.toString().split(/\s+/).filter(Boolean);
        } finally {
          await container.remove({ force: true });
        }
      };
      expect(await tools(tag)).toEqual(['node', 'rg', 'tar', 'bash']);
      expect(await tools(`${tag}-bare`)).toEqual(['tar', 'bash']);
      const again = await run(['--tag', tag]);
      expect(again.stdout).toMatch(new RegExp(`^${tag} is up to date \\(\\d+ MB\\)\\n$`));
    } finally {
      for (const name of [`${tag}-bare`, tag])
        await docker
          .getImage(name)
          .remove({ force: true })
          .catch(() => undefined);
    }
  }, 180_000);
});
