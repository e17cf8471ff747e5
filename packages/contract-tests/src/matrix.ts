import { readFileSync } from 'node:fs';
import { type DecidedBy, type DeclaredCase, ROUTES, type Route } from './suite.js';

/** How the host reaches a gateway: a socket in a shared folder, a command's streams, a vendor's port proxy. */
export type GatewayChannel = 'socket' | 'stdio' | 'proxied';

/** One target of a conformance matrix: where its calls go, and which shared cases it runs. */
export interface MatrixTarget {
  /** The backend it belongs to (`docker` for every Docker target). */
  readonly backend: string;
  /** The route its calls take (see {@link Route}). */
  readonly route: Route;
  /** On the `gateway` route: how the host reaches the gateway. */
  readonly channel?: GatewayChannel;
  /**
   * The shared kinds of case it runs for its route (backend-decided cases run on every target):
   * `engine`, `gateway`, both or neither.
   */
  readonly runs: readonly ('engine' | 'gateway')[];
  /**
   * For a variant of a backend (the same backend set up another way: another storage, no gateway),
   * the backend-decided areas (the part of a case id before its dot) whose code the variant changes,
   * and so runs; the backend's other targets run the rest. Absent: every backend-decided area.
   */
  readonly areas?: readonly string[];
  /** Why the target is set up so: the code path it stands for, and for a variant what it changes. */
  readonly why?: string;
}

/** One case of a conformance matrix: what decides it, the routes it takes, the targets it runs on. */
export interface MatrixCase {
  /** What decides its outcome, as the case declares it. */
  readonly decidedBy: DecidedBy;
  /** The routes it can take, as the case declares them. */
  readonly takes: readonly Route[];
  /** The names of the targets it runs on. */
  readonly targets: readonly string[];
}

/**
 * A checked-in plan of which case runs on which target: `targets` is written by hand, `cases` follows
 * from it and from what each case declares (see planCases); a case runs on exactly the
 * targets its entry lists.
 */
export interface ConformanceMatrix {
  /** The targets, by the name each registers the suite under (`docker (named volume)`). */
  readonly targets: Readonly<Record<string, MatrixTarget>>;
  /** Every case, by id. */
  readonly cases: Readonly<Record<string, MatrixCase>>;
}

/** What the matrix needs of a declared case. */
export type CaseFacts = Pick<DeclaredCase, 'id' | 'decidedBy' | 'takes'>;

/** The area of a case id: the part before its dot (`files` of `files.large-file`). */
export const areaOf = (id: string): string => id.split('.')[0]!;

/**
 * Whether `target` runs `facts` by the rule: a backend case on every target of its backend whose
 * variant changes its area, a shared one where the target runs its kind on a route it takes.
 */
export function runsOn(facts: CaseFacts, target: MatrixTarget): boolean {
  if (facts.decidedBy === 'backend') return target.areas?.includes(areaOf(facts.id)) ?? true;
  return target.runs.includes(facts.decidedBy) && facts.takes.includes(target.route);
}

/** The targets each case runs on, by the rule of `runsOn`, in the order of `targets`. */
export function planCases(
  cases: readonly CaseFacts[],
  targets: ConformanceMatrix['targets'],
): Record<string, MatrixCase> {
  const planned: Record<string, MatrixCase> = {};
  for (const facts of [...cases].sort((a, b) => a.id.localeCompare(b.id)))
    planned[facts.id] = {
      decidedBy: facts.decidedBy,
      takes: [...facts.takes],
      targets: Object.entries(targets)
        .filter(([, target]) => runsOn(facts, target))
        .map(([name]) => name),
    };
  return planned;
}

/**
 * What is wrong with `matrix` for the cases the suite declares (`cases`), one sentence each: a case
 * missing from it or gone from the code, an entry that no longer follows from the targets and the
 * case, a route (or a gateway channel) a case takes with no target running it there, a backend that
 * does not run a backend-decided area.
 */
export function matrixProblems(matrix: ConformanceMatrix, cases: readonly CaseFacts[]): string[] {
  const problems: string[] = [];
  const declared = new Map(cases.map((facts) => [facts.id, facts]));
  const targets = matrix.targets;
  for (const [name, target] of Object.entries(targets)) {
    if (!ROUTES.includes(target.route)) problems.push(`target "${name}": unknown route ${target.route}`);
    if ((target.route === 'gateway') !== (target.channel !== undefined))
      problems.push(`target "${name}": a channel is given exactly for the gateway route`);
    if (target.areas && !target.why)
      problems.push(`target "${name}": a variant that runs only some areas says why ("why")`);
  }
  // A variant leaves out areas its backend runs elsewhere: each backend has a target running all.
  for (const backend of new Set(Object.values(targets).map((target) => target.backend)))
    if (!Object.values(targets).some((target) => target.backend === backend && !target.areas))
      problems.push(`target of ${backend}: none runs every backend-decided area (each has "areas")`);
  for (const facts of cases)
    if (!matrix.cases[facts.id])
      problems.push(
        `case ${facts.id} is declared by the suite but missing from the matrix: add it (WS_MATRIX_WRITE=1 writes the matrix from the code)`,
      );
  for (const id of Object.keys(matrix.cases))
    if (!declared.has(id))
      problems.push(
        `case ${id} is in the matrix but the suite no longer declares it: a case leaves only by an edit of the matrix that removes its entry`,
      );
  const planned = planCases(
    cases.filter((facts) => matrix.cases[facts.id]),
    targets,
  );
  for (const [id, entry] of Object.entries(matrix.cases)) {
    const facts = declared.get(id);
    const plan = planned[id];
    if (!facts || !plan) continue;
    if (entry.decidedBy !== facts.decidedBy)
      problems.push(`case ${id}: the matrix says decided by ${entry.decidedBy}, the code ${facts.decidedBy}`);
    if (entry.takes.join() !== facts.takes.join())
      problems.push(
        `case ${id}: the matrix says it takes ${entry.takes.join(', ')}, the code ${facts.takes.join(', ')}`,
      );
    if (entry.targets.join('\n') !== plan.targets.join('\n'))
      problems.push(
        `case ${id}: the matrix runs it on [${entry.targets.join(', ')}], its kind and the targets' routes give [${plan.targets.join(', ')}]`,
      );
    problems.push(...coverageProblems(id, entry, targets));
  }
  // Every backend runs every backend-decided area (the part of an id before its dot).
  const backends = new Set(Object.values(targets).map((target) => target.backend));
  const areas = new Set(
    Object.entries(matrix.cases)
      .filter(([, entry]) => entry.decidedBy === 'backend')
      .map(([id]) => areaOf(id)),
  );
  for (const backend of backends)
    for (const area of areas) {
      const ran = Object.entries(matrix.cases).some(
        ([id, entry]) =>
          areaOf(id) === area &&
          entry.decidedBy === 'backend' &&
          entry.targets.some((name) => targets[name]?.backend === backend),
      );
      if (!ran) problems.push(`backend ${backend} runs no case of the backend-decided area ${area}`);
    }
  return problems;
}

/** The routes and gateway channels `entry` takes that none of its targets runs it on. */
function coverageProblems(id: string, entry: MatrixCase, targets: ConformanceMatrix['targets']): string[] {
  const problems: string[] = [];
  const on = entry.targets.map((name) => targets[name]).filter((target) => target !== undefined);
  if (entry.decidedBy === 'backend') {
    for (const [name, target] of Object.entries(targets))
      if (!entry.targets.includes(name) && (target.areas?.includes(areaOf(id)) ?? true))
        problems.push(
          `case ${id} is decided by the backend and must run on every target that takes its area, but not on "${name}"`,
        );
    return problems;
  }
  for (const route of entry.takes) {
    if (!Object.values(targets).some((target) => target.route === route)) continue;
    if (!on.some((target) => target.route === route))
      problems.push(`case ${id} takes the ${route} route, and no target runs it there`);
  }
  // A gateway-decided case runs through every channel a gateway is reached by.
  if (entry.decidedBy === 'gateway' && entry.takes.includes('gateway')) {
    const channels = new Set(
      Object.values(targets).flatMap((target) => (target.channel ? [target.channel] : [])),
    );
    for (const channel of channels)
      if (!on.some((target) => target.route === 'gateway' && target.channel === channel))
        problems.push(
          `case ${id} is decided by the gateway, and no target runs it through the ${channel} channel`,
        );
  }
  return problems;
}

/**
 * The matrix named by `WS_CONFORMANCE_MATRIX` (a JSON file), or undefined when it is unset or `off`
 * (every case then runs on every target).
 */
export function matrixFromEnvironment(): { path: string; matrix: ConformanceMatrix } | undefined {
  const path = process.env.WS_CONFORMANCE_MATRIX;
  if (!path || path === 'off') return undefined;
  return { path, matrix: JSON.parse(readFileSync(path, 'utf8')) as ConformanceMatrix };
}

/**
 * What a target runs under `matrix`, and what is wrong: the target missing from it, a case it
 * declares that the matrix does not know, a shared case the matrix gives it that it does not declare.
 */
export function targetPlan(
  matrix: ConformanceMatrix,
  name: string,
  declaredHere: readonly CaseFacts[],
): { keep: (facts: CaseFacts) => boolean; problems: string[] } {
  if (!matrix.targets[name])
    return {
      keep: () => false,
      problems: [
        `the target "${name}" is not in the conformance matrix: add it under "targets" (or set WS_CONFORMANCE_MATRIX=off to run every case on it)`,
      ],
    };
  const problems: string[] = [];
  const here = new Set(declaredHere.map((facts) => facts.id));
  for (const facts of declaredHere) {
    const entry = matrix.cases[facts.id];
    if (!entry)
      problems.push(`case ${facts.id} is not in the conformance matrix, so it runs nowhere: add it`);
    else if (entry.decidedBy !== facts.decidedBy || entry.takes.join() !== facts.takes.join())
      problems.push(
        `case ${facts.id}: the matrix's entry no longer matches what the case declares: write the matrix again`,
      );
  }
  for (const [id, entry] of Object.entries(matrix.cases))
    if (entry.decidedBy !== 'backend' && entry.targets.includes(name) && !here.has(id))
      problems.push(`the matrix runs case ${id} on this target, which does not declare it`);
  return { keep: (facts) => matrix.cases[facts.id]?.targets.includes(name) ?? false, problems };
}
