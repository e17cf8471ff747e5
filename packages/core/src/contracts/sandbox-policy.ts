/**
 * What the sandbox may use. Every backend takes this shape and maps it to its own knob (Docker's
 * HostConfig, a Pod's resources, a cloud vendor's sandbox resources, cgroups or rlimits on the host);
 * a backend that cannot enforce a limit that was asked for refuses to open with
 * `CAPABILITY_UNSUPPORTED`, it never runs without it.
 */
export interface WorkspaceLimits {
  /** CPUs the sandbox may use, fractions allowed (`0.5` is half of one CPU). */
  readonly cpus?: number;
  /** Memory in MiB; a process past it is killed (a command reports `outOfMemory`). */
  readonly memoryMiB?: number;
  /**
   * Most processes and threads at once. Docker and bubblewrap set {@link DEFAULT_PIDS_LIMIT} when
   * this is not given, so a fork bomb exhausts its sandbox only.
   */
  readonly pids?: number;
  /** Disk space of the sandbox in MiB, where the backend can cap it. */
  readonly diskMiB?: number;
}

/** The names of {@link WorkspaceLimits}. */
export type WorkspaceLimit = keyof WorkspaceLimits;

/**
 * Where the sandbox's commands may connect: `'none'` (no network at all; the workspace itself still
 * works), `'full'` (the backend's ordinary network), or only the hosts and networks of an allow list
 * (`{ allow: ['10.0.0.0/8', 'registry.npmjs.org'] }`: addresses, CIDR blocks, host names, `*.`
 * wildcards), where the backend can enforce one. A backend that cannot enforce the policy asked for
 * refuses to open with `CAPABILITY_UNSUPPORTED`.
 */
export type NetworkPolicy =
  | 'none'
  | 'full'
  | {
      /** The addresses, CIDR blocks and host names (`*.` wildcards allowed) commands may connect to. */
      readonly allow: readonly string[];
    };

/**
 * What commands may do as the sandbox's user: `'hardened'` (no capabilities, and none gained through
 * setuid programs; `apt-get install` fails) or `'standard'` (the backend's ordinary privileges: Docker's
 * default capability set, so a root user can install packages). See each backend's documentation for
 * what it gives; a backend that cannot give what was asked refuses with `CAPABILITY_UNSUPPORTED`.
 */
export type Privileges = 'hardened' | 'standard';

/** The sandbox policy options every backend takes, spelt the same everywhere. */
export interface SandboxPolicyOptions {
  /** What the sandbox may use. Default: no limit but the process limit on Docker and bubblewrap. */
  limits?: WorkspaceLimits;
  /** Where commands may connect. Default: the backend's (see its `network` documentation). */
  network?: NetworkPolicy;
  /** What commands may do. Default: the backend's (hardened on Docker and bubblewrap). */
  privileges?: Privileges;
}

/** The process limit of a Docker or bubblewrap sandbox when `limits.pids` is not given. */
export const DEFAULT_PIDS_LIMIT = 2048;
