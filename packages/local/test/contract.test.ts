import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostProcessesUsing, registerConformanceSuite } from '@ws/contract-tests';
import { afterAll } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-local-conformance-'));
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
afterAll(() => rmSync(base, { recursive: true, force: true }));

await registerConformanceSuite({
  name: 'local',
  // Host processes run as the host process's user: `user` is refused.
  user: 'refused',
  leftovers: (workspaceId) => hostProcessesUsing(join(base, workspaceId)),
  // Host processes: no limit, the host's network, the host user's own privileges (root here, which
  // the privileges case looks for); everything else is refused.
  policy: { limits: [], network: ['full'], privileges: ['standard'] },
  process: {
    module: built,
    exportName: 'LocalWorkspace',
    options: ({ workspaceId }) => ({ hostWorkdir: join(base, workspaceId), workspaceId }),
  },
  create: ({ workspaceId, ...options }) =>
    new LocalWorkspace({ ...options, hostWorkdir: join(base, workspaceId), workspaceId }),
});
