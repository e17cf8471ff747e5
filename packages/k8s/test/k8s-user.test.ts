import { generateId, isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { K8sWorkspace } from '../src/index.js';
import { connection, emulatorProblem, image, stopEmulator } from './emulator.js';

// The user option through the unmodified client against the emulator: a Pod as a container whose
// user is runAsUser:runAsGroup and whose volume the fsGroup can write.
const problem = await emulatorProblem();
const emulated = problem ? undefined : await connection();
const owner = `ws-k8s-user-${generateId().slice(0, 8)}`;

afterAll(async () => {
  await stopEmulator();
}, 120_000);

describe.skipIf(problem !== undefined)('K8s user on the emulator', () => {
  it('runs as uid:gid in a workdir the fsGroup can write; a running Pod with another user is a CONFLICT', async () => {
    const workspaceId = `user-${generateId().slice(0, 8)}`;
    const options = { kubeconfig: emulated?.kubeconfig, namespace: 'default', image, owner, workspaceId };
    const workspace = await K8sWorkspace.open({ ...options, user: '1234:5678' });
    try {
      const sandbox = workspace.getSandbox();
      const who = await sandbox.exec(['sh', '-c', 'id -u; id -g; id -G; touch made && stat -c "%u %g" made']);
      expect(who.stdoutText).toBe('1234\n5678\n5678\n1234 5678\n');
      const other = new K8sWorkspace({ ...options, user: '4321' });
      const error = await other.initialize().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      await other.close();
      expect(isWsError(error, 'CONFLICT'), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/runs as 1234:5678, not 4321/);
    } finally {
      await workspace.destroy();
    }
  }, 180_000);
});
