import type {
  McpServerSpec,
  SandboxPolicyOptions,
  SearchMode,
  Workspace,
  WorkspaceEventListener,
  WorkspacePackages,
} from '@ws/core';
import type { PolicySupport } from '@ws/core/backend';

/** The workspace shape the conformance suite drives. */
export type WorkspaceUnderTest = Workspace & {
  /** What went wrong but did not stop the opening, when the backend reports it. */
  readonly warnings?: readonly string[];
};

/** Options the suite passes to {@link ConformanceTarget.create}; a backend forwards them to its workspace. */
export interface CreateOptions extends SandboxPolicyOptions {
  /** The workspace's id. */
  workspaceId: string;
  /** Forwarded as the workspace's `searchMode`, so Grep and Glob run with ripgrep and without. */
  searchMode?: SearchMode;
  /** Forwarded as the workspace's `defaultMcps`. */
  defaultMcps?: readonly McpServerSpec[];
  /** Forwarded as the workspace's `maxLiveStatefulMcps`. */
  maxLiveStatefulMcps?: number;
  /** Forwarded as the workspace's `skillPaths` (host folders). */
  skillPaths?: readonly string[];
  /** Forwarded as the workspace's `packages` (only by the packages area, to a target with `packages`). */
  packages?: WorkspacePackages;
  /** Forwarded as the workspace's `user`; only a target that declares `user` is asked for it. */
  user?: string;
  /** Forwarded as the workspace's `onEvent` (only by the fault rig's cases, to its `create`). */
  onEvent?: WorkspaceEventListener;
  /**
   * Create the workspace under the target's second owner tag: one fixed tag, other than the one
   * every other call uses, for the case that keeps two owners of one id apart. Only a target with
   * `owners: true` is asked for it.
   */
  secondOwner?: boolean;
}

/**
 * How a separate Node process opens the target's workspaces, for the cases that kill a host process
 * in the middle of its work. The process runs plain `node`: `module` must be importable without a
 * build step of the test runner (a built package entry, as an absolute path or file URL).
 */
export interface ChildProcessTarget {
  /** The module that exports the workspace class. */
  readonly module: string;
  /** The class's export name; it is constructed with `new`, then `initialize()`d. */
  readonly exportName: string;
  /** JSON-serialisable constructor options reaching the same workspace as `create` does. */
  options(create: CreateOptions): Record<string, unknown>;
}

/**
 * What a cloud target gives the fault area: workspaces whose every connection to the service (and to
 * its sandboxes) passes through a proxy on 127.0.0.1 whose traffic the case switches.
 */
export interface FaultRig {
  /** The vendor's name as the backend's error messages spell it (`E2B`, `Kubernetes`). */
  readonly vendor: string;
  /**
   * `pass` forwards; `hang` forwards nothing more on open connections and new ones and closes
   * nothing (a proxy or load balancer that stopped forwarding); `reset` resets every connection;
   * `http-500` answers every request that starts `500` (a failing service), `http-429` answers it
   * `429` with `Retry-After: 1` (a rate limit); an upgraded connection (a WebSocket) keeps passing.
   */
  set(mode: 'pass' | 'hang' | 'reset' | 'http-500' | 'http-429'): void;
  /** Requests the rig answered itself (`http-500`, `http-429`) so far. */
  readonly answered?: number;
  /**
   * Why the workspace's `retry` events cannot show a throttled open waiting (the vendor's SDK sends a
   * request refused by a rate limit again by itself, out of the workspace's sight); absent when they
   * must show it.
   */
  readonly retriesUnseen?: string;
  /**
   * A new workspace, not yet initialized, that reaches the service through the proxy only, with
   * request time limits of a few seconds, under the target's owner tag.
   */
  create(options: CreateOptions): WorkspaceUnderTest | Promise<WorkspaceUnderTest>;
  /** Stops the proxy and whatever the rig started. */
  close(): Promise<void>;
}

/** What a backend hands the conformance suite. */
export interface ConformanceTarget {
  /** How another process opens the same workspaces; without it, the host-crash cases are skipped. */
  readonly process?: ChildProcessTarget;
  /** The backend's name, shown in the suite's title (`"local"`). */
  readonly name: string;
  /**
   * Creates a new workspace, not yet initialized. Two calls with the same `workspaceId` must reach
   * the same persistent state (the same host directory, container name or sandbox label), so that
   * re-attach can be tested.
   */
  create(options: CreateOptions): WorkspaceUnderTest | Promise<WorkspaceUnderTest>;
  /**
   * What of the workspace `workspaceId` is still on the host, seen from outside (processes,
   * containers, sockets, temporary folders), one line each: empty once it closed, or once a new
   * object on its id closed after its process was killed. Without it, those cases are skipped.
   */
  leftovers?(workspaceId: string): Promise<string[]>;
  /**
   * True when the backend tags what it creates with an owner and `create` honours `secondOwner`
   * (the cloud backends); without it, the owner case is skipped.
   */
  readonly owners?: boolean;
  /**
   * What the backend enforces of `limits`, `network` and `privileges` (forwarded by `create` as they
   * are): the policy area checks each supported one in a sandbox and expects every other one to be
   * refused at open with `CAPABILITY_UNSUPPORTED`. `defaultPids`: a process limit holds with no
   * limits given. `create`: how the policy area creates its workspaces, when not as `create` does
   * (the no-network case needs sandboxes that have a network to lose: a cloud target whose emulator
   * gives none creates these through one that does). Without `policy`, the area is skipped.
   */
  readonly policy?: PolicySupport & {
    /** A process limit holds when no limits are given. */
    readonly defaultPids?: boolean;
    /** How the policy area creates its workspaces. Default: as `create` does. */
    readonly create?: (options: CreateOptions) => WorkspaceUnderTest | Promise<WorkspaceUnderTest>;
  };
  /**
   * Creates a workspace on an image without node (the same backend otherwise): `mcp.node-less-image`
   * runs a stdio MCP server there through the gateway the backend brings; without it, that case is skipped.
   */
  nodeless?(options: CreateOptions): WorkspaceUnderTest | Promise<WorkspaceUnderTest>;
  /**
   * The `user` option: the value the user area opens a workspace with (forwarded by `create`), the
   * uid its commands must then run as and, when the image has an account for it, its name; or
   * `'refused'` for a backend that cannot switch users (the option must fail with
   * `INVALID_ARGUMENT`). Without it, the user area is skipped.
   */
  readonly user?:
    | {
        /** The value of the `user` option the workspace is opened with. */
        readonly option: string;
        /** The uid its commands must run as. */
        readonly uid: number;
        /** The account's name, when the image has one for that uid. */
        readonly name?: string;
      }
    | 'refused';
  /**
   * Which installers of the `packages` option work in the target's sandboxes (a workspace with the
   * same id re-attaches to the same sandbox while another object on it is open): the packages area
   * installs a package of each one made in the sandbox (no network), checks it works and that a
   * re-attach does not install it again. `options`: what every workspace of the area adds (a user
   * that can write npm's global prefix, where the default one cannot); `aptOptions`: what the apt case
   * adds besides (root with its capabilities: `{ privileges: 'standard' }` on Docker). `prepare`: makes the declared
   * installers runnable in an open workspace's sandbox (places npm in an image without it) before the
   * first open with packages. Without `packages`, the area is skipped.
   */
  readonly packages?: {
    /** Whether npm installs work. */
    readonly npm: boolean;
    /** Whether apt installs work. */
    readonly apt: boolean;
    /** Whether pip installs work. */
    readonly pip: boolean;
    /** What every workspace of the area adds to its options. */
    readonly options?: Omit<CreateOptions, 'workspaceId' | 'packages' | 'secondOwner'>;
    /** What the apt case adds besides `options`. */
    readonly aptOptions?: SandboxPolicyOptions;
    /** Makes the declared installers runnable in an open workspace's sandbox. */
    readonly prepare?: (workspace: WorkspaceUnderTest) => Promise<void>;
  };
  /** The fault rig of a backend with a remote service; without it, the fault area is skipped. */
  faults?(): Promise<FaultRig>;
  /** When it returns a reason, the whole suite is skipped and the reason printed (engine missing). */
  skipReason?(): string | undefined | Promise<string | undefined>;
  /**
   * One part of the suite, for a long suite split across test files that the runner runs side by
   * side: `{ index: 2, count: 3 }` registers the second of three parts. The suite's areas are dealt
   * out to the parts in turn, so the parts of one count cover every area exactly once. Default: the
   * whole suite.
   */
  readonly shard?: {
    /** Which part this is, from 1. */
    readonly index: number;
    /** How many parts the suite is split into. */
    readonly count: number;
  };
  /** Time limit of one case in milliseconds. Default 60 000. */
  readonly caseTimeoutMs?: number;
  /**
   * Size of the output `exec.output-cap` streams. Default 96 MiB: the case looks at the memory the
   * host keeps alive eight times while it streams, and holding the output would keep more than the
   * half of it the case allows (a backend whose channel keeps more than about 40 MiB alive by design
   * streams more).
   */
  readonly largeOutputBytes?: number;
  /**
   * Size of the files of the large-file cases, and the most the writes interrupted by a dying gateway
   * or host may hold: those take the smallest size from 1 MiB up whose write lasts 250 ms, and place
   * their kills at fractions of that time. Default 64 MiB; a backend whose file transfers are slow
   * sets less.
   */
  readonly largeFileBytes?: number;
  /**
   * How long the long MCP tool call runs (it must succeed when its own timeout allows it). Default
   * 33 000 ms: past the 30 s that AgentScope's gateway allows any call, with room for a slow start.
   */
  readonly longMcpCallMs?: number;
}

/** The resolved settings one area works with. */
export interface AreaContext {
  /** The target under test. */
  readonly target: ConformanceTarget;
  /** Creates a workspace through the target with a fresh, unique id and remembers it for cleanup. */
  create(workspaceId?: string, options?: Omit<CreateOptions, 'workspaceId'>): Promise<WorkspaceUnderTest>;
  /** A fresh, unique workspace id. */
  newId(): string;
  /** Time limit of one case in milliseconds (the target's, or the default). */
  readonly caseTimeoutMs: number;
  /** Size in bytes of the output `exec.output-cap` streams (the target's, or the default). */
  readonly largeOutputBytes: number;
  /** Size in bytes of the large-file cases' files (the target's, or the default). */
  readonly largeFileBytes: number;
  /** How long the long MCP tool call runs, in milliseconds (the target's, or the default). */
  readonly longMcpCallMs: number;
}
