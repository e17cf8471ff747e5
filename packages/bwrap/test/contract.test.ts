import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { entriesMatching, hostProcessesUsing, registerConformanceSuite } from '@ws/contract-tests';
import { hostTag } from '@ws/core/backend';
import { afterAll } from 'vitest';
import { BubblewrapWorkspace, bubblewrapProblem } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-conformance-'));
const cache = mkdtempSync(join(tmpdir(), 'ws-bwrap-cache-'));
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
// What a workspace left, seen from the host: processes using its workdir, its temporary folders.
const leftovers = (workdir: (workspaceId: string) => string) => async (workspaceId: string) => [
  ...(await hostProcessesUsing(workdir(workspaceId))),
  ...(await entriesMatching(tmpdir(), new RegExp(`^ws-bwrap-${hostTag(workspaceId)}-`))),
  ...(await entriesMatching(cache, new RegExp(`^run-${hostTag(workspaceId)}-`))),
];
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

await registerConformanceSuite({
  name: 'bwrap',
  skipReason: () => bubblewrapProblem(),
  leftovers: leftovers((workspaceId) => join(base, workspaceId)),
  process: {
    module: built,
    exportName: 'BubblewrapWorkspace',
    options: ({ workspaceId }) => ({
      hostWorkdir: join(base, workspaceId),
      hostRuntimeDir: cache,
      workspaceId,
    }),
  },
  create: ({ workspaceId, ...options }) =>
    new BubblewrapWorkspace({
      ...options,
      hostWorkdir: join(base, workspaceId),
      hostRuntimeDir: cache,
      workspaceId,
    }),
});

// The same suite with no gateway (as in a sandbox without node): files through commands, no MCP.
await registerConformanceSuite({
  name: 'bwrap (no gateway)',
  skipReason: () => bubblewrapProblem(),
  leftovers: leftovers((workspaceId) => join(base, `bare-${workspaceId}`)),
  process: {
    module: built,
    exportName: 'BubblewrapWorkspace',
    options: ({ workspaceId }) => ({
      hostWorkdir: join(base, `bare-${workspaceId}`),
      hostRuntimeDir: cache,
      workspaceId,
      gateway: false,
    }),
  },
  create: ({ workspaceId, ...options }) =>
    new BubblewrapWorkspace({
      ...options,
      hostWorkdir: join(base, `bare-${workspaceId}`),
      hostRuntimeDir: cache,
      workspaceId,
      gateway: false,
    }),
});

// The same suite on a temporary workdir (no hostWorkdir): nothing outlives close(), and the cases
// that need files to persist say so and skip.
await registerConformanceSuite({
  name: 'bwrap (temporary workdir)',
  skipReason: () => bubblewrapProblem(),
  leftovers: async (workspaceId) => [
    ...(await hostProcessesUsing(join(tmpdir(), `ws-bwrap-${hostTag(workspaceId)}-`))),
    ...(await entriesMatching(tmpdir(), new RegExp(`^ws-bwrap-${hostTag(workspaceId)}-`))),
    ...(await entriesMatching(cache, new RegExp(`^run-${hostTag(workspaceId)}-`))),
  ],
  create: ({ workspaceId, ...options }) =>
    new BubblewrapWorkspace({ ...options, hostRuntimeDir: cache, workspaceId }),
});
