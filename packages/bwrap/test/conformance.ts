import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  entriesMatching,
  hostProcessesUsing,
  registerConformanceSuite,
  requireEngine,
} from '@ws/contract-tests';
import { hostTag } from '@ws/core/backend';
import { afterAll } from 'vitest';
import { BubblewrapWorkspace, type BubblewrapWorkspaceOptions, bubblewrapProblem } from '../src/index.js';

/** How a conformance run sets up its workspaces; each is a test file of its own. */
export type BubblewrapSetup = 'host folder' | 'no gateway' | 'temporary workdir';

// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

/** Registers the conformance suite on bubblewrap, set up as `setup` says, in the calling test file. */
export async function registerBubblewrapConformance(setup: BubblewrapSetup): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-conformance-'));
  const cache = mkdtempSync(join(tmpdir(), 'ws-bwrap-cache-'));
  afterAll(() => {
    rmSync(base, { recursive: true, force: true });
    rmSync(cache, { recursive: true, force: true });
  });
  // What a workspace left, seen from the host: processes using its workdir, its temporary folders.
  const leftovers = (workdir: string, workspaceId: string) => async () => [
    ...(await hostProcessesUsing(workdir)),
    ...(await entriesMatching(tmpdir(), new RegExp(`^ws-bwrap-${hostTag(workspaceId)}-`))),
    ...(await entriesMatching(cache, new RegExp(`^run-${hostTag(workspaceId)}-`))),
  ];
  const skipReason = () => requireEngine('bubblewrap', bubblewrapProblem());

  if (setup === 'temporary workdir') {
    // No hostWorkdir: nothing outlives close().
    await registerConformanceSuite({
      name: 'bwrap (temporary workdir)',
      skipReason,
      leftovers: (workspaceId) =>
        leftovers(join(tmpdir(), `ws-bwrap-${hostTag(workspaceId)}-`), workspaceId)(),
      create: ({ workspaceId, ...options }) =>
        new BubblewrapWorkspace({ ...options, hostRuntimeDir: cache, workspaceId }),
    });
    return;
  }
  // Without the gateway (as in a sandbox without node): files through commands, no MCP.
  const bare = setup === 'no gateway';
  const options = (workspaceId: string): BubblewrapWorkspaceOptions => ({
    hostWorkdir: join(base, bare ? `bare-${workspaceId}` : workspaceId),
    hostRuntimeDir: cache,
    workspaceId,
    ...(bare ? { gateway: false } : {}),
  });
  await registerConformanceSuite({
    name: bare ? 'bwrap (no gateway)' : 'bwrap',
    skipReason,
    leftovers: (workspaceId) => leftovers(options(workspaceId).hostWorkdir!, workspaceId)(),
    process: {
      module: built,
      exportName: 'BubblewrapWorkspace',
      options: ({ workspaceId }) => ({ ...options(workspaceId) }),
    },
    create: ({ workspaceId, ...rest }) => new BubblewrapWorkspace({ ...rest, ...options(workspaceId) }),
  });
}
