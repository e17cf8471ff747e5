import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import {
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type Privileges,
  type Sandbox,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
} from '@ws/core';
import {
  createExecResult,
  ProcessGroups,
  resolveSandboxPath,
  runHostCommand,
  spawnHostProcess,
  throwIfAborted,
} from '@ws/core/backend';
import { JOIN_FAILED, JOIN_FAILURE, joinCgroupArgv } from './bwrap-cgroup.js';
import { capabilityArguments } from './bwrap-policy.js';
import { SandboxInit, STATUS_ARGUMENTS } from './sandbox-init.js';

/** Where the workdir appears inside the sandbox. */
export const SANDBOX_WORKDIR = '/workspace';

/** What the sandbox sees: host directories bound at fixed places. */
export interface BwrapMounts {
  /** Host directory bound read-write at `/workspace`. */
  readonly hostWorkdir: string;
  /** Host directory bound read-write at `/tmp`. */
  readonly hostTmp: string;
  /** Share the host's network (needed for anything that talks to the network). */
  readonly shareNet: boolean;
  /** Extra host paths bound read-only at the same place (a node installed outside /usr, say). */
  readonly readOnlyPaths: readonly string[];
  /** What commands may do: no capabilities (`hardened`, the default) or Docker's default set. */
  readonly privileges?: Privileges;
}

// Top-level system paths: bound read-only where they are directories, recreated where they are links.
const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
// The few files of /etc that programs need to run; nothing else of the host's /etc is visible.
const ETC_FILES = [
  'resolv.conf',
  'hosts',
  'nsswitch.conf',
  'passwd',
  'group',
  'alternatives',
  'ssl',
  'pki',
  'ca-certificates',
  'localtime',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
];
export const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The host's programs and libraries, read-only (links such as a merged /usr's /bin kept as links). */
export function systemMounts(): string[] {
  const args: string[] = [];
  for (const path of SYSTEM_PATHS) {
    if (!existsSync(path)) continue;
    const info = lstatSync(path);
    if (info.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
    else if (info.isDirectory()) args.push('--ro-bind', path, path);
  }
  return args;
}

/** The bwrap arguments that set up the mounts (everything before `--chdir`). */
export function mountArguments(mounts: BwrapMounts, extra: readonly string[] = []): string[] {
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-all',
    ...capabilityArguments(mounts.privileges),
  ];
  if (mounts.shareNet) args.push('--share-net');
  // Root without capabilities may still write /proc/sys (the files are root's, mode 0644), and
  // kernel.core_pattern there runs a program on the host: the sysctls are bound read-only.
  args.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--dev', '/dev');
  args.push(...systemMounts());
  for (const name of ETC_FILES) args.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  for (const path of mounts.readOnlyPaths) args.push('--ro-bind', path, path);
  args.push(
    '--bind',
    mounts.hostWorkdir,
    SANDBOX_WORKDIR,
    '--bind',
    mounts.hostTmp,
    '/tmp',
    '--tmpfs',
    '/run',
    '--dir',
    '/var',
    '--tmpfs',
    '/var/tmp',
  );
  args.push(...extra);
  // The sandbox's own root (where /etc, /opt… would be written) is read-only: only /workspace and /tmp take writes.
  args.push('--remount-ro', '/');
  return args;
}

/** The environment inside: the caller's variables, then a fixed base that they cannot override. */
export function environmentArguments(env: Readonly<Record<string, string>>, cwd: string): string[] {
  const merged: Record<string, string> = {
    ...env,
    HOME: SANDBOX_WORKDIR,
    TMPDIR: '/tmp',
    PATH: BASE_PATH,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PWD: cwd,
  };
  const args = ['--clearenv'];
  for (const [name, value] of Object.entries(merged)) args.push('--setenv', name, value);
  return args;
}

const BWRAP_CHDIR = /^bwrap: Can't chdir to (.*): (No such file or directory|Not a directory)/m;
const BWRAP_EXEC = /^bwrap: execvp (.*): (No such file or directory|Permission denied)/m;

// Read and write with the path resolved inside the sandbox: symbolic links are followed there, and a
// path that lands outside /workspace and /tmp is refused (exit 77), as is a missing file (66).
const READ_SCRIPT = `p=$(realpath -m -- "$1") || exit 66
case "$p" in /workspace|/workspace/*|/tmp|/tmp/*) ;; *) echo "$1 leads to $p" >&2; exit 77;; esac
[ -e "$p" ] || exit 66
[ -d "$p" ] && exit 67
[ -f "$p" ] || { echo "$1 is not a regular file (a FIFO, device or socket)" >&2; exit 65; }
exec cat -- "$p"`;
// Writes go to a new file beside the target and are renamed over it only once every byte arrived
// ($3: the expected size), so a writer killed halfway leaves the target as it was. Without a mode
// ($2) a replaced file keeps its permission bits and a new one gets 0666 less the umask.
const WRITE_SCRIPT = `p=$(realpath -m -- "$1") || exit 66
case "$p" in /workspace/*|/tmp/*) ;; *) echo "$1 leads to $p" >&2; exit 77;; esac
[ -d "$p" ] && exit 67
d=$(dirname -- "$p")
if [ -e "$d" ] && [ ! -d "$d" ]; then exit 68; fi
mkdir -p -- "$d" 2>/dev/null || { [ -d "$d" ] || exit 68; }
t=$(mktemp "$d/.ws-XXXXXXXXXXXX.tmp") || exit 1
trap 'rm -f -- "$t"' EXIT
cat > "$t" || exit 1
[ "$(wc -c < "$t")" -eq "$3" ] || { echo "the input ended early" >&2; exit 1; }
if [ -n "$2" ]; then m=$2
elif [ -e "$p" ]; then m=$(stat -c %a -- "$p") || exit 1
else m=$(printf %o $((0666 & ~$(umask)))); fi
chmod "$m" -- "$t" && mv -f -- "$t" "$p" || exit 1
trap - EXIT`;

const SCRIPT_ERRORS: Readonly<
  Record<
    number,
    'INVALID_ARGUMENT' | 'NOT_FOUND' | 'IS_A_DIRECTORY' | 'NOT_A_DIRECTORY' | 'PERMISSION_DENIED'
  >
> = {
  65: 'INVALID_ARGUMENT',
  66: 'NOT_FOUND',
  67: 'IS_A_DIRECTORY',
  68: 'NOT_A_DIRECTORY',
  77: 'PERMISSION_DENIED',
};

/** Refuses a sandbox path outside /workspace and /tmp. */
export function checkSandboxPath(absolute: string): void {
  const allowed = ['/workspace', '/tmp'].some((root) => absolute === root || absolute.startsWith(`${root}/`));
  if (!allowed) {
    throw new WsError(
      'PERMISSION_DENIED',
      `${absolute} is outside /workspace and /tmp, the only places files are read and written`,
      {
        details: { path: absolute },
      },
    );
  }
}

/**
 * One `bwrap` per command: a fresh set of namespaces (the network shared unless asked otherwise), a
 * read-only minimal system, the workdir at `/workspace`, a private `/tmp`, a cleared environment with
 * a fixed base, and every process killed with its sandbox.
 */
export class BwrapSandbox implements Sandbox {
  readonly backend = 'bwrap';
  readonly workdir = SANDBOX_WORKDIR;
  readonly capabilities: SandboxCapabilities = {
    stat: false,
    list: false,
    remove: false,
    mkdir: false,
    rename: false,
    readStream: false,
    writeStream: false,
    spawn: true,
  };
  private readonly groups = new ProcessGroups();

  /**
   * A sandbox over host folders; does no I/O.
   * @param mounts The host folders bound into it.
   * @param env The environment of its commands.
   * @param bwrap The bubblewrap binary to run. Default: `bwrap` on the PATH.
   * @param cgroupProcs The `cgroup.procs` files of the cgroups every bwrap starts in (its limits).
   */
  constructor(
    private readonly mounts: BwrapMounts,
    private readonly env: Readonly<Record<string, string>>,
    private readonly bwrap = 'bwrap',
    private readonly cgroupProcs: readonly string[] = [],
  ) {}

  /** The full host argv for one command in `cwd` (inside the sandbox): bwrap, started in the cgroups. */
  argv(
    argv: readonly string[],
    cwd: string,
    env: Readonly<Record<string, string>> = {},
    extraMounts: readonly string[] = [],
  ): string[] {
    return joinCgroupArgv(this.cgroupProcs, [
      this.bwrap,
      ...STATUS_ARGUMENTS,
      ...mountArguments(this.mounts, extraMounts),
      ...environmentArguments({ ...this.env, ...env }, cwd),
      '--chdir',
      cwd,
      '--',
      ...argv,
    ]);
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    throwIfAborted(options.signal);
    if (
      argv.length === 0 ||
      argv.some((argument) => typeof argument !== 'string' || argument.includes('\0'))
    ) {
      throw new WsError('INVALID_ARGUMENT', 'argv must be a non-empty array of strings without NUL');
    }
    const cwd =
      options.cwd === undefined ? SANDBOX_WORKDIR : resolveSandboxPath(SANDBOX_WORKDIR, options.cwd);
    const result = await runHostCommand(this.argv(argv, cwd, options.env), {
      cwd: this.mounts.hostWorkdir,
      env: { PATH: process.env.PATH ?? BASE_PATH },
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      onStdout: options.onStdout,
      onStderr: options.onStderr,
      maxOutputBytes: options.maxOutputBytes,
      track: this.groups.track,
      wrapper: new SandboxInit(),
    });
    if (result.exitCode === JOIN_FAILED && result.stderrText.startsWith(JOIN_FAILURE))
      throw new WsError(
        'BACKEND_ERROR',
        `The command could not start in its cgroup: ${result.stderrText.trim()}`,
      );
    // bwrap reports its own failures on stderr with exit code 1; tell them from the command's.
    if (result.exitCode === 1) {
      const stderr = result.stderrText;
      const chdir = BWRAP_CHDIR.exec(stderr);
      if (chdir) {
        throw new WsError(
          chdir[2] === 'Not a directory' ? 'NOT_A_DIRECTORY' : 'NOT_FOUND',
          `The working directory ${cwd} does not exist in the sandbox`,
          {
            details: { cwd },
          },
        );
      }
      const execvp = BWRAP_EXEC.exec(stderr);
      if (execvp) {
        const missing = execvp[2] === 'No such file or directory';
        return createExecResult({
          exitCode: missing ? 127 : 126,
          stderr: new TextEncoder().encode(
            missing
              ? `${execvp[1]}: command not found\n`
              : `${execvp[1]}: cannot execute: permission denied\n`,
          ),
        });
      }
    }
    return result;
  }

  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    const cwd =
      options.cwd === undefined ? SANDBOX_WORKDIR : resolveSandboxPath(SANDBOX_WORKDIR, options.cwd);
    return spawnHostProcess(this.argv(argv, cwd, options.env), {
      cwd: this.mounts.hostWorkdir,
      env: { PATH: process.env.PATH ?? BASE_PATH },
      signal: options.signal,
      track: this.groups.track,
      wrapper: new SandboxInit(),
    });
  }

  private async script(
    script: string,
    args: string[],
    options: FileOptions & { stdin?: Uint8Array },
  ): Promise<ExecResult> {
    const result = await this.exec(['sh', '-c', script, 'sh', ...args], {
      cwd: '/',
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.stdin ? { stdin: options.stdin } : {}),
      maxOutputBytes: Number.MAX_SAFE_INTEGER,
    });
    if (result.exitCode !== 0) {
      const code = SCRIPT_ERRORS[result.exitCode] ?? 'BACKEND_ERROR';
      throw new WsError(
        code,
        `${args[0]}: ${result.stderrText.trim() || code.toLowerCase().replaceAll('_', ' ')}`,
        { details: { path: args[0] } },
      );
    }
    return result;
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    const target = resolveSandboxPath(SANDBOX_WORKDIR, path);
    checkSandboxPath(target);
    return (await this.script(READ_SCRIPT, [target], options)).stdout;
  }

  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const target = resolveSandboxPath(SANDBOX_WORKDIR, path);
    checkSandboxPath(target);
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    const mode = options.mode !== undefined ? options.mode.toString(8) : '';
    await this.script(WRITE_SCRIPT, [target, mode, String(bytes.byteLength)], {
      ...options,
      stdin: bytes,
    });
  }

  /** Stops every command and process this sandbox started. */
  async dispose(): Promise<void> {
    await this.groups.stopAll();
  }
}
