import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerConformanceSuite } from '@ws/contract-tests';
import { afterAll } from 'vitest';
import { BubblewrapWorkspace, bubblewrapProblem } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-conformance-'));
const cache = mkdtempSync(join(tmpdir(), 'ws-bwrap-cache-'));
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
afterAll(() => {
  rmSync(base, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

await registerConformanceSuite({
  name: 'bwrap',
  skipReason: () => bubblewrapProblem(),
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
