import { generateId } from '@ws/core';
import { afterAll, describe, it } from 'vitest';
import { execArea } from './areas/exec.js';
import { faultsArea } from './areas/faults.js';
import { filesArea } from './areas/files.js';
import { layoutArea } from './areas/layout.js';
import { lifecycleArea } from './areas/lifecycle.js';
import { lifecycleLeftoversArea } from './areas/lifecycle-leftovers.js';
import { mcpArea } from './areas/mcp.js';
import { offloadArea } from './areas/offload.js';
import { packagesArea } from './areas/packages.js';
import { policyArea } from './areas/policy.js';
import { securityBoundaryArea } from './areas/security-boundary.js';
import { securityIntegrityArea } from './areas/security-integrity.js';
import { skillsArea } from './areas/skills.js';
import { spawnArea } from './areas/spawn.js';
import { toolsBashArea } from './areas/tools-bash.js';
import { toolsFilesArea } from './areas/tools-files.js';
import { toolsSearchArea } from './areas/tools-search.js';
import { userArea } from './areas/user.js';
import type { AreaContext, ConformanceTarget, WorkspaceUnderTest } from './target.js';

export { ENGINE_SETUP, type Engine, isCi, MissingEngineError, requireEngine } from './engines.js';
export {
  allByteValues,
  expectWsError,
  HOSTILE_IDS,
  HOSTILE_NAMES,
  patternBytes,
  sameBytes,
} from './harness.js';
export { entriesMatching, hostProcessesUsing } from './leftovers.js';
export { stdioSpec, uploadMcpFixtures } from './mcp-fixtures.js';
export { registerReaperSuite } from './reaper.js';
export { crashWhileOpen } from './reaper-hosts.js';
export {
  REAPER_CASES,
  type ReaperCaseId,
  type ReaperCreateOptions,
  type ReaperProcessTarget,
  type ReaperTarget,
  type UnmarkedResource,
} from './reaper-target.js';
export type {
  AreaContext,
  ChildProcessTarget,
  ConformanceTarget,
  CreateOptions,
  FaultRig,
  WorkspaceUnderTest,
} from './target.js';

/** The conformance areas, in the order they run. */
export const CONFORMANCE_AREAS = [
  'exec',
  'spawn',
  'files',
  'lifecycle',
  'layout',
  'tools',
  'offload',
  'skills',
  'mcp',
  'security',
  'faults',
  'policy',
  'packages',
  'user',
] as const;

/**
 * Registers the whole conformance suite for one backend inside the calling test file. Case titles
 * start with a stable id (`[exec.argv-verbatim] …`), the same on every backend. When
 * `target.skipReason()` returns a reason, every case is skipped and the reason is printed.
 *
 * ```ts
 * registerConformanceSuite({
 *   name: 'local',
 *   create: ({ workspaceId }) => new LocalWorkspace({ hostWorkdir: join(base, workspaceId), workspaceId }),
 * });
 * ```
 */
export async function registerConformanceSuite(target: ConformanceTarget): Promise<void> {
  const reason = await target.skipReason?.();
  if (reason) {
    console.warn(`[conformance] ${target.name}: skipped: ${reason}`);
    describe(`conformance: ${target.name}`, () => {
      it.skip(`skipped: ${reason}`, () => {});
    });
    return;
  }
  const created: WorkspaceUnderTest[] = [];
  const runId = generateId().slice(0, 8);
  let counter = 0;
  const context: AreaContext = {
    target,
    newId: () => `conf-${runId}-${++counter}`,
    async create(workspaceId, options = {}) {
      const workspace = await target.create({ ...options, workspaceId: workspaceId ?? context.newId() });
      created.push(workspace);
      return workspace;
    },
    caseTimeoutMs: target.caseTimeoutMs ?? 60_000,
    largeOutputBytes: target.largeOutputBytes ?? 96 * 1024 * 1024,
    largeFileBytes: target.largeFileBytes ?? 64 * 1024 * 1024,
    longMcpCallMs: target.longMcpCallMs ?? 33_000,
  };
  const areas = shardOf(target.shard, [
    execArea,
    spawnArea,
    filesArea,
    lifecycleArea,
    lifecycleLeftoversArea,
    layoutArea,
    toolsBashArea,
    toolsFilesArea,
    toolsSearchArea,
    offloadArea,
    skillsArea,
    mcpArea,
    securityBoundaryArea,
    securityIntegrityArea,
    faultsArea,
    policyArea,
    packagesArea,
    userArea,
  ]);
  describe(`conformance: ${target.name}`, () => {
    afterAll(async () => {
      await Promise.allSettled(created.map((workspace) => workspace.close()));
    }, context.caseTimeoutMs);
    for (const area of areas) area(context);
  });
}

/** The areas of one shard: of the areas in order, the `index`-th of every `count`. */
function shardOf<Area>(shard: ConformanceTarget['shard'], areas: readonly Area[]): readonly Area[] {
  if (!shard) return areas;
  const { index, count } = shard;
  if (!Number.isInteger(count) || !Number.isInteger(index) || count < 1 || index < 1 || index > count)
    throw new Error(
      `a conformance shard is { index: 1..count, count: 1 or more }, not ${JSON.stringify(shard)}`,
    );
  return areas.filter((_, position) => position % count === index - 1);
}
