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
import { closeAllWithin } from './cleanup.js';
import { matrixFromEnvironment, targetPlan } from './matrix.js';
import { casesIn, type DeclaredCase, declared, handToVitest } from './suite.js';
import type { AreaContext, ConformanceTarget, WorkspaceUnderTest } from './target.js';

export { type CleanupStep, cleanUpWithin, closeAllWithin } from './cleanup.js';
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
export {
  type CaseFacts,
  type ConformanceMatrix,
  type GatewayChannel,
  type MatrixCase,
  type MatrixTarget,
  matrixProblems,
  planCases,
} from './matrix.js';
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
export type { CaseOptions, DecidedBy, DeclaredCase, Route, SectionOptions } from './suite.js';
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

/** The functions that declare the areas' cases, in the order they run. */
const AREAS: readonly ((context: AreaContext) => void)[] = [
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
];

/**
 * Registers the whole conformance suite for one backend inside the calling test file. Case titles
 * start with a stable id (`[exec.argv-verbatim] …`), the same on every backend. When
 * `target.skipReason()` returns a reason, every case is skipped and the reason is printed.
 *
 * When the environment variable `WS_CONFORMANCE_MATRIX` names a matrix (a JSON
 * {@link ConformanceMatrix}), the target runs the cases the matrix gives it and no others: a case
 * decided by the shared engine or the gateway then runs on a few targets that together take every
 * route, a case decided by the backend on every target. Without it, every case runs.
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
  // Every area is declared (the matrix checks the whole target in each part), then the part's handed to vitest.
  const areas = AREAS.map((area) => declared(target.name, () => area(context)));
  const matrix = matrixFromEnvironment();
  const plan = matrix
    ? targetPlan(matrix.matrix, target.name, areas.flatMap(casesIn))
    : { keep: () => true, problems: [] };
  const part = shardOf(target.shard, areas);
  describe(`conformance: ${target.name}`, () => {
    // Each close bounded below the hook's own limit, so a close that hangs is named, not just timed out.
    afterAll(
      () => closeAllWithin(created, Math.max(1_000, context.caseTimeoutMs - 3_000)),
      context.caseTimeoutMs,
    );
    if (plan.problems.length > 0 && (target.shard?.index ?? 1) === 1)
      it('[matrix] runs the cases the conformance matrix gives this target', () => {
        throw new Error(`${matrix?.path}:\n- ${plan.problems.join('\n- ')}`);
      });
    for (const area of part) handToVitest(area, plan.keep);
  });
}

/**
 * Every case the suite declares, with what decides it and the routes it takes (for a conformance
 * matrix, see {@link matrixProblems}): the areas declared for a target that supports every optional
 * area, nothing run.
 */
export function listConformanceCases(): DeclaredCase[] {
  const unreachable = (): never => {
    throw new Error('listing cases runs nothing');
  };
  const target: ConformanceTarget = {
    name: 'listing',
    create: unreachable,
    policy: { limits: [], network: [], privileges: [] },
    packages: { npm: true, apt: true, pip: true },
    user: 'refused',
    faults: unreachable,
  };
  const context: AreaContext = {
    target,
    newId: unreachable,
    create: unreachable,
    caseTimeoutMs: 60_000,
    largeOutputBytes: 0,
    largeFileBytes: 0,
    longMcpCallMs: 0,
  };
  return AREAS.flatMap((area) => casesIn(declared('listing', () => area(context))));
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
