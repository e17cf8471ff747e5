import type { GcOptions, GcReport, Workspace } from '@ws/core';

/** The reaper cases, in the order they run. */
export const REAPER_CASES = [
  'reaper.young',
  'reaper.dry-run',
  'reaper.in-use',
  'reaper.remote-host',
  'reaper.owners-apart',
  'reaper.aborted-before',
  'reaper.aborted-while',
  'reaper.removed',
  'reaper.shared-sandbox',
] as const;

/** The id of a reaper case. */
export type ReaperCaseId = (typeof REAPER_CASES)[number];

/** The workspace the reaper suite asks a target for: its id, and the owner tag it carries. */
export interface ReaperCreateOptions {
  /** The workspace's id. */
  workspaceId: string;
  /** The owner tag (the workspaces' `owner` option); each case group has its own. */
  owner: string;
}

/**
 * How a separate Node process opens the target's workspaces, for the hosts the suite kills, and for
 * two managers in two processes. The process runs plain `node`: `module` must be a built entry point
 * (an absolute path or file URL), and `@ws/core` must resolve from it.
 */
export interface ReaperProcessTarget {
  /** The module that exports the workspace class. */
  readonly module: string;
  /** The class's export name; it is constructed with `new`, then `initialize()`d. */
  readonly exportName: string;
  /** JSON-serialisable constructor options reaching the same workspaces as `create` does. */
  options(create: ReaperCreateOptions): Record<string, unknown>;
  /**
   * The export name of the backend's factory (`dockerWorkspaces`): a host opening its workspace
   * through a `WorkspaceManager` passes it `options` as the manager's factory. Default: `new` on
   * the class for each id.
   */
  readonly factoryName?: string;
}

/** Something carrying an owner tag but not the marks of a workspace: the reaper must never touch it. */
export interface UnmarkedResource {
  /** Its name as the reaper would list it (a sandbox id, `namespace/pod`). */
  readonly name: string;
  /** Whether it is still there and not on its way out. */
  exists(): Promise<boolean>;
}

/**
 * What a backend hands the reaper suite: its reaper, how to make what the reaper looks at, and how to
 * see from outside what is left.
 */
export interface ReaperTarget {
  /** The backend's name, shown in the suite's title (`"docker"`). */
  readonly name: string;
  /** The `kind` its reaper reports for a workspace's sandbox (`container`, `sandbox`, `pod`). */
  readonly kind: string;
  /** When it returns a reason, the whole suite is skipped and the reason printed (engine missing). */
  skipReason?(): string | undefined | Promise<string | undefined>;
  /** A new workspace, not yet initialized, under the owner tag `owner`. */
  create(options: ReaperCreateOptions): Workspace | Promise<Workspace>;
  /** Runs the backend's reaper (`gcDocker`, `gcE2B`, …) with the target's connection. */
  gc(options: GcOptions): Promise<GcReport>;
  /**
   * The sandboxes (containers, Pods, host folders) of the workspace `workspaceId` still there, seen
   * from outside, one line each (`sbx-12 paused`): empty once the reaper removed them. It answers
   * once none is passing between two states (pausing, stopping).
   */
  resources(workspaceId: string): Promise<string[]>;
  /** How another process opens the workspaces: the suite kills such hosts to leave orphans. */
  readonly process: ReaperProcessTarget;
  /**
   * Waits until what a killed host left running ends by itself (a command attached to the host, which
   * ends once the engine sees its stream closed). Without it, nothing to wait for.
   */
  afterCrash?(workspaceId: string): Promise<void>;
  /**
   * Other ways this backend's workspaces are left behind than a killed host, by name, each leaving
   * one orphan of `workspaceId` under `owner`: `closed` (closed without destroying, its files kept),
   * `stray` (created with the marks by a service that died before it attached), ….
   */
  readonly orphans?: Readonly<Record<string, (options: ReaperCreateOptions) => Promise<void>>>;
  /** Leaves something carrying `owner`'s tag but not the marks of a workspace. Without it, not checked. */
  unmarked?(owner: string): Promise<UnmarkedResource>;
  /**
   * The attachment records in a running sandbox (see `Attachments` in @ws/core), for the case of a
   * host on another machine. Without it, that case is skipped.
   */
  readonly records?: {
    /** Writes the record `name` (a process on another machine) in the sandbox of `workspaceId`, touched now. */
    plant(workspaceId: string, name: string): Promise<void>;
    /** Sets the time of every record in the sandbox of `workspaceId` to long ago (a host that stopped touching them). */
    age(workspaceId: string): Promise<void>;
  };
  /**
   * True when two hosts asking for one workspace at once reach one sandbox and keep it until the last
   * lets go; without it, that case is skipped.
   */
  readonly sharedAcrossProcesses?: boolean;
  /**
   * Cases known to fail on this backend, by id, each with why: they run as expected failures
   * (`it.fails`), so that a fix shows as a failure until its entry is removed. Default: none.
   */
  readonly knownFailures?: Readonly<Partial<Record<ReaperCaseId, string>>>;
  /** Removes everything carrying the owner tag `owner`, after the suite (whatever a case left). */
  cleanup(owner: string): Promise<void>;
  /** Time limit of one case in milliseconds (the first one creates the shared workspaces). Default 180 000. */
  readonly caseTimeoutMs?: number;
}
