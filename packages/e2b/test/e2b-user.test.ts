import { generateId, isWsError } from '@ws/core';
import { Sandbox } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { E2BSandbox } from '../src/e2b-sandbox.js';
import { E2BWorkspace, killOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

describe('the user option on E2B', () => {
  it('refuses a numeric id or a malformed name with INVALID_ARGUMENT, before anything is created', () => {
    for (const user of ['1000', '1000:1000', 'Root', '']) {
      let error: unknown;
      try {
        new E2BWorkspace({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9', user });
      } catch (caught) {
        error = caught;
      }
      expect(isWsError(error, 'INVALID_ARGUMENT'), `${user}: ${String(error)}`).toBe(true);
    }
    expect(
      String(new E2BWorkspace({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9', user: 'root' }).id),
    ).toBeTruthy();
  });
});

const problem = await emulatorProblem();
const emulated = problem ? undefined : await connection();

describe.skipIf(problem)('the user option on the E2B emulator', () => {
  const owner = `ws-test-${generateId().slice(0, 8)}`;
  afterAll(async () => {
    if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => {});
    await stopEmulator();
  }, 120_000);

  it('fails the open with INVALID_ARGUMENT naming a user the template lacks', async () => {
    const workspace = new E2BWorkspace({ ...emulated, owner, user: 'no_such_user' });
    const error = await workspace.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await workspace.close().catch(() => {});
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    expect(String((error as Error).message)).toContain('no_such_user');
  });

  it('runs commands and writes files as the user through envd', async () => {
    await using workspace = await E2BWorkspace.open({ ...emulated, owner, user: 'root' });
    const vendor = await Sandbox.connect(workspace.sandboxId!, { ...emulated! });
    // The emulator's envd acts as root when no user is sent: `nobody` shows the user travels.
    const sandbox = new E2BSandbox(vendor, '/tmp', {}, 'nobody');
    const who = await sandbox.exec(['sh', '-c', 'id -u; id -un']);
    expect(who.stdoutText).toBe('65534\nnobody\n');
    await sandbox.writeFile('/tmp/by-nobody.txt', 'x');
    expect((await sandbox.exec(['stat', '-c', '%u', '/tmp/by-nobody.txt'])).stdoutText).toBe('65534\n');
    expect((await sandbox.stat('/tmp/by-nobody.txt')).size).toBe(1);
    expect(new TextDecoder().decode(await sandbox.readFile('/tmp/by-nobody.txt'))).toBe('x');
  });
});
