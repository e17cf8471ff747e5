import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem } from '../src/index.js';

const refusal = (options: Record<string, unknown>) => {
  try {
    new DockerWorkspace(options as never);
  } catch (error) {
    return error;
  }
  return undefined;
};

// Construction does no I/O: this runs without a Docker engine.
describe('Docker user option', () => {
  it('refuses a malformed user with INVALID_ARGUMENT', () => {
    for (const user of ['', 'Root', 'a:b', 'x\ny', 'a\0', '1:2:3', '-x', 'x'.repeat(65), 7]) {
      const error = refusal({ user });
      expect(isWsError(error, 'INVALID_ARGUMENT'), `${JSON.stringify(user)}: ${String(error)}`).toBe(true);
    }
    for (const user of ['nobody', '_apt', 'www-data', '1000', '1000:1000', '0'])
      expect(refusal({ user })).toBeUndefined();
  });
});

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const reason = requireEngine('docker', await dockerProblem(image));

describe.skipIf(reason)('Docker user option in a container', () => {
  const opened: DockerWorkspace[] = [];
  afterAll(async () => {
    for (const workspace of opened) await workspace.close().catch(() => {});
  });

  it('runs commands, the gateway and file writes as the user; writes the workdir', async () => {
    const workspaceId = `user-${generateId().slice(0, 8)}`;
    const workspace = await DockerWorkspace.open({ workspaceId, image, user: 'nobody' });
    opened.push(workspace);
    const sandbox = workspace.getSandbox();
    const who = await sandbox.exec(['sh', '-c', 'id -u; id -un; id -g']);
    expect(who.stdoutText).toBe('65534\nnobody\n65534\n');
    await sandbox.exec(['sh', '-c', 'echo made > by-command.txt']);
    await sandbox.writeFile('by-api.txt', new TextEncoder().encode('written'));
    const owners = await sandbox.exec([
      'stat',
      '-c',
      '%u:%g %n',
      'by-command.txt',
      'by-api.txt',
      '.',
      'data',
    ]);
    expect(owners.stdoutText).toBe(
      '65534:65534 by-command.txt\n65534:65534 by-api.txt\n65534:65534 .\n65534:65534 data\n',
    );
    // The gateway answers, and runs as the user too.
    expect(await workspace.gatewayReady()).toBeTypeOf('number');
    const processes = await sandbox.exec([
      'sh',
      '-c',
      'grep -l gateway /proc/[0-9]*/cmdline; stat -c %u /proc/[0-9]* 2>/dev/null | sort -u',
    ]);
    expect(processes.stdoutText).toMatch(/cmdline\n65534\n$/);

    // Found by name with another user: refused; with none asked: attached.
    const other = new DockerWorkspace({ workspaceId, image, user: '0' });
    const error = await other.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isWsError(error, 'CONFLICT'), String(error)).toBe(true);
    await other.close();
  });

  it('refuses a user name the image lacks with INVALID_ARGUMENT naming user and image, leaving nothing', async () => {
    const workspaceId = `user-${generateId().slice(0, 8)}`;
    const workspace = new DockerWorkspace({ workspaceId, image, user: 'no_such_user' });
    const error = await workspace.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    expect(String((error as Error).message)).toContain('no_such_user');
    expect(String((error as Error).message)).toContain(image);
    await workspace.close();
    const retry = await DockerWorkspace.open({ workspaceId, image, user: '1234:5678' });
    opened.push(retry);
    const who = await retry.getSandbox().exec(['sh', '-c', 'id -u; id -g; stat -c %u:%g .']);
    expect(who.stdoutText).toBe('1234\n5678\n1234:5678\n');
  });
});
