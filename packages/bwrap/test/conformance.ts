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

// What bubblewrap enforces here: limits through cgroups (this host's process is root), both network
// settings but allow lists, both privilege settings (standard needs root).
const root = process.getuid?.() === 0;
const policy = {
  limits: root ? (['cpus', 'memoryMiB', 'pids'] as const) : [],
  network: ['none', 'full'] as const,
  privileges: root ? (['hardened', 'standard'] as const) : (['hardened'] as const),
  defaultPids: root,
};

/** The workspace cgroups of an id (one folder per controller on cgroup v1), as the host sees them. */
async function cgroupsOf(workspaceId: string): Promise<string[]> {
  // `<tag of the runtime folder>-<tag of the id>-<pid>-<random>`.
  const pattern = new RegExp(`^[0-9a-f]{12}-${hostTag(workspaceId)}-`);
  const parents = ['pids', 'memory', 'cpu', 'cpu,cpuacct', 'unified', '.'].map((hierarchy) =>
    join('/sys/fs/cgroup', hierarchy, 'ws'),
  );
  return (await Promise.all(parents.map((parent) => entriesMatching(parent, pattern)))).flat();
}

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
    ...(await cgroupsOf(workspaceId)),
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
    // The host process's user, mapped into the sandbox: `user` is refused.
    user: 'refused',
    // The default process limit once (it forks two thousand processes).
    policy: { ...policy, defaultPids: policy.defaultPids && !bare },
    leftovers: (workspaceId) => leftovers(options(workspaceId).hostWorkdir!, workspaceId)(),
    process: {
      module: built,
      exportName: 'BubblewrapWorkspace',
      options: ({ workspaceId }) => ({ ...options(workspaceId) }),
    },
    create: ({ workspaceId, ...rest }) => new BubblewrapWorkspace({ ...rest, ...options(workspaceId) }),
  });
}
