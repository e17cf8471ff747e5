import { generateId, isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DaytonaWorkspace, deleteOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

describe('the user option on Daytona', () => {
  it('refuses a numeric id or a malformed name with INVALID_ARGUMENT, before anything is created', () => {
    for (const user of ['1000', '0:0', 'Root', '']) {
      let error: unknown;
      try {
        new DaytonaWorkspace({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9/api', user });
      } catch (caught) {
        error = caught;
      }
      expect(isWsError(error, 'INVALID_ARGUMENT'), `${user}: ${String(error)}`).toBe(true);
    }
  });
});

const problem = await emulatorProblem();
const emulated = problem ? undefined : await connection();
const owner = `ws-test-${generateId().slice(0, 8)}`;

afterAll(async () => {
  if (emulated) await deleteOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

describe.skipIf(problem)('the user option on the Daytona emulator', () => {
  it('creates the sandbox as the user, and refuses with CONFLICT to re-attach as another', async () => {
    const workspaceId = `user-${generateId().slice(0, 8)}`;
    const workspace = await DaytonaWorkspace.open({ ...emulated, owner, workspaceId, user: 'root' });
    const who = await workspace.getSandbox().exec(['sh', '-c', 'id -un']);
    expect(who.stdoutText).toBe('root\n');
    expect(workspace.workdir).toBe('/root/workspace');
    await workspace.close();
    const other = new DaytonaWorkspace({ ...emulated, owner, workspaceId, user: 'daytona' });
    const error = await other.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    await other.close();
    expect(isWsError(error, 'CONFLICT'), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/runs as root, not daytona/);
  }, 120_000);
});
