import {
  afterAll as vitestAfterAll,
  beforeAll as vitestBeforeAll,
  describe as vitestDescribe,
  it as vitestIt,
} from 'vitest';

/**
 * What decides a case's outcome, and so on which targets it must run:
 * - `engine`: the shared tool engine over the `Sandbox` primitive (the same code on every backend);
 *   it runs once per route the engine's calls can take (see {@link Route});
 * - `gateway`: the in-sandbox gateway and its host client; it runs once per route, and through the
 *   gateway once per channel the host reaches a gateway by;
 * - `backend`: the backend itself (exec, files, streams, lifecycle, re-attach, limits, policy, user,
 *   the security boundary, faults, reaping); it runs on every target.
 */
export type DecidedBy = 'engine' | 'gateway' | 'backend';

/**
 * The way a target's calls reach its sandbox: `host` (the engine acts on the host itself, as the
 * local backend does), `gateway` (through the gateway running in the sandbox), `direct` (through the
 * backend's own primitives, no gateway: an Engine API, an exec stream, bubblewrap per command).
 */
export type Route = 'host' | 'gateway' | 'direct';

/** Every route, in the order the matrix lists them. */
export const ROUTES: readonly Route[] = ['host', 'gateway', 'direct'];

/** What a case can do besides asserting. */
export interface CaseControls {
  /** Marks the case skipped with a printed reason (a capability this backend does not declare). */
  skip(reason: string): never;
}

/** How one case is registered, besides its id, title and body. */
export interface CaseOptions {
  /** Time limit of the case in milliseconds. Default: the context's `caseTimeoutMs`. */
  readonly timeoutMs?: number;
  /** What decides its outcome. Default: what the enclosing section says. */
  readonly decidedBy?: DecidedBy;
  /**
   * The routes on which it tests something (an MCP case cannot run without a gateway or the host;
   * a case that needs a sandbox boundary means nothing on the host). Default: every route for an
   * `engine` case, `host` and `gateway` for a `gateway` case, or what the enclosing section says.
   */
  readonly takes?: readonly Route[];
}

/** What a section says of the cases declared inside it. */
export interface SectionOptions {
  /** What decides the outcome of its cases (each may say otherwise). */
  readonly decidedBy?: DecidedBy;
  /** The routes its cases take (each may say otherwise). */
  readonly takes?: readonly Route[];
}

/** One declared case: its stable id, its title, what decides it and where it can run. */
export interface DeclaredCase {
  /** A case (a declared section says `section`). */
  readonly type: 'case';
  /** Its id, `<area>.<name>` (`exec.timeout`), unique in the suite and kept in the matrix. */
  readonly id: string;
  /** What it checks, in a sentence (the test's title after its id). */
  readonly title: string;
  /** What decides its outcome: its own option, else its section's. */
  readonly decidedBy: DecidedBy;
  /** The routes it can take: its own option, else its section's, else those of its kind. */
  readonly takes: readonly Route[];
  /** Its vitest timeout in milliseconds. */
  readonly timeoutMs: number;
  /** Its body, run by vitest when the case is kept. */
  readonly body: (test: CaseControls) => Promise<void>;
}

/** One declared section (a vitest `describe`): its hooks, and the sections and cases inside it. */
export interface DeclaredSection {
  readonly type: 'section';
  readonly name: string;
  readonly decidedBy: DecidedBy | undefined;
  readonly takes: readonly Route[] | undefined;
  readonly hooks: {
    readonly kind: 'beforeAll' | 'afterAll';
    readonly fn: () => unknown;
    readonly timeoutMs?: number;
  }[];
  readonly children: (DeclaredSection | DeclaredCase)[];
}

let open: DeclaredSection | undefined;

function current(what: string): DeclaredSection {
  if (!open)
    throw new Error(
      `${what} is declared outside a conformance area: areas run inside registerConformanceSuite`,
    );
  return open;
}

/** The routes a case of `decidedBy` takes when nothing says otherwise. */
export function defaultTakes(decidedBy: DecidedBy): readonly Route[] {
  return decidedBy === 'gateway' ? ['host', 'gateway'] : ROUTES;
}

/**
 * Declares a section of cases, as vitest's `describe` does; it reaches vitest only if a case inside
 * it is kept for the target (see {@link handToVitest}), so a section none of whose cases run on a
 * target neither appears nor runs its hooks there.
 */
export function describe(name: string, body: () => void): void;
export function describe(name: string, options: SectionOptions, body: () => void): void;
export function describe(
  name: string,
  optionsOrBody: SectionOptions | (() => void),
  maybeBody?: () => void,
): void {
  const parent = current(`the section "${name}"`);
  const options = typeof optionsOrBody === 'function' ? {} : optionsOrBody;
  const body = typeof optionsOrBody === 'function' ? optionsOrBody : maybeBody!;
  const section: DeclaredSection = {
    type: 'section',
    name,
    decidedBy: options.decidedBy ?? parent.decidedBy,
    takes: options.takes ?? parent.takes,
    hooks: [],
    children: [],
  };
  parent.children.push(section);
  open = section;
  try {
    body();
  } finally {
    open = parent;
  }
}

/** As vitest's `beforeAll`, for the enclosing section (run only where one of its cases runs). */
export function beforeAll(fn: () => unknown, timeoutMs?: number): void {
  current('a beforeAll hook').hooks.push({ kind: 'beforeAll', fn, timeoutMs });
}

/** As vitest's `afterAll`, for the enclosing section (run only where one of its cases runs). */
export function afterAll(fn: () => unknown, timeoutMs?: number): void {
  current('an afterAll hook').hooks.push({ kind: 'afterAll', fn, timeoutMs });
}

/** Declares one case in the enclosing section. */
export function declareCase(
  id: string,
  title: string,
  body: (test: CaseControls) => Promise<void>,
  timeoutMs: number,
  options: Omit<CaseOptions, 'timeoutMs'> = {},
): void {
  const section = current(`the case ${id}`);
  const decidedBy = options.decidedBy ?? section.decidedBy;
  if (!decidedBy)
    throw new Error(
      `the case ${id} does not say what decides its outcome: give its section or the case a decidedBy`,
    );
  section.children.push({
    type: 'case',
    id,
    title,
    decidedBy,
    takes: options.takes ?? section.takes ?? defaultTakes(decidedBy),
    timeoutMs,
    body,
  });
}

/** Runs `declare` (which declares sections and cases) and returns what it declared, handing nothing to vitest. */
export function declared(name: string, declare: () => void): DeclaredSection {
  const root: DeclaredSection = {
    type: 'section',
    name,
    decidedBy: undefined,
    takes: undefined,
    hooks: [],
    children: [],
  };
  const saved = open;
  open = root;
  try {
    declare();
  } finally {
    open = saved;
  }
  return root;
}

/** Every case declared in `section`, in order. */
export function casesIn(section: DeclaredSection): DeclaredCase[] {
  return section.children.flatMap((child) => (child.type === 'case' ? [child] : casesIn(child)));
}

/**
 * Hands vitest the sections of `section` (not the section itself) that hold a case `keep` keeps,
 * with their hooks, and the kept cases, titled `[id] title`. Call it inside a vitest `describe`.
 */
export function handToVitest(section: DeclaredSection, keep: (declared: DeclaredCase) => boolean): void {
  for (const hook of section.hooks)
    (hook.kind === 'beforeAll' ? vitestBeforeAll : vitestAfterAll)(
      hook.fn as () => Promise<void>,
      hook.timeoutMs,
    );
  for (const child of section.children) {
    if (child.type === 'case') {
      if (keep(child))
        vitestIt(
          `[${child.id}] ${child.title}`,
          (test) => child.body({ skip: (reason) => test.skip(reason) }),
          child.timeoutMs,
        );
    } else if (casesIn(child).some(keep)) {
      vitestDescribe(child.name, () => handToVitest(child, keep));
    }
  }
}
