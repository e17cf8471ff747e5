/**
 * The primitives one backend provides. Three are required (`exec`, `readFile`, `writeFile`); the
 * rest are optional natives, declared in {@link SandboxCapabilities}. Core fills in every native a
 * backend leaves out with a POSIX fallback built on `exec` (see `completeSandbox`), so code that
 * holds a {@link CompleteSandbox} can call all of them.
 *
 * Paths are POSIX paths inside the sandbox. A relative path is resolved against the sandbox's
 * `workdir`, never against a host process's current directory.
 */

/** Where a command's standard input comes from. An async iterable is streamed as it is produced. */
export type ExecInput = string | Uint8Array | AsyncIterable<Uint8Array>;

/**
 * Receives output as it arrives. Returning a promise pauses reading until it settles, so a slow
 * consumer applies back-pressure instead of letting output pile up in memory.
 */
export type OutputListener = (chunk: Uint8Array) => void | Promise<void>;

/** Options of {@link Sandbox.exec}. */
export interface ExecOptions {
  /** Working directory; relative paths resolve against the workdir. Default: the workdir. */
  cwd?: string;
  /** Variables added to (and overriding) the sandbox's base environment for this command. */
  env?: Readonly<Record<string, string>>;
  /** Standard input. Default: none (stdin is closed at once). */
  stdin?: ExecInput;
  /**
   * Time limit in milliseconds. When it passes, the command's whole process group is killed and the
   * result has `timedOut: true` and `exitCode: -1`. Default: none.
   */
  timeoutMs?: number;
  /** Aborting kills the command's whole process group and rejects with `ABORTED`. */
  signal?: AbortSignal;
  /** Called with each stdout chunk as it arrives, whether or not it fits in `maxOutputBytes`. */
  onStdout?: OutputListener;
  /** Called with each stderr chunk as it arrives, whether or not it fits in `maxOutputBytes`. */
  onStderr?: OutputListener;
  /**
   * The most bytes kept of each of stdout and stderr in the result. Output past the cap is read and
   * dropped while the command runs (memory stays flat) and the result has `truncated: true`.
   * Default: {@link DEFAULT_MAX_OUTPUT_BYTES}.
   */
  maxOutputBytes?: number;
}

/** 32 MiB: the default cap on the bytes an {@link ExecResult} keeps of each stream. */
export const DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024;

/** The outcome of a command. A non-zero exit is a result, never an exception. */
export interface ExecResult {
  /**
   * The exit code. `127`: the executable was not found; `126`: it could not be executed; `-1`: the
   * command timed out; `128 + n`: it was killed by signal `n`.
   */
  readonly exitCode: number;
  /** Standard output, at most `maxOutputBytes` of it. */
  readonly stdout: Uint8Array;
  /** Standard error, at most `maxOutputBytes` of it. */
  readonly stderr: Uint8Array;
  /** `stdout` decoded as UTF-8 (invalid sequences become U+FFFD). */
  readonly stdoutText: string;
  /** `stderr` decoded as UTF-8 (invalid sequences become U+FFFD). */
  readonly stderrText: string;
  /** True when the command was killed because `timeoutMs` passed. */
  readonly timedOut: boolean;
  /** True when stdout or stderr was longer than `maxOutputBytes` and the rest was dropped. */
  readonly truncated: boolean;
  /** The signal that ended the command, when one did (`"SIGKILL"`). */
  readonly signal?: string | undefined;
  /**
   * True when the command (or a process it started) was killed for passing the sandbox's memory
   * limit (`limits.memoryMiB`), where the backend can tell.
   */
  readonly outOfMemory?: boolean | undefined;
}

/** The kind of a directory entry. */
export type FileType = 'file' | 'directory' | 'symlink' | 'other';

/** What {@link Sandbox.stat} reports. It follows symbolic links. */
export interface FileStat {
  /** What the path is, after following links (never `symlink`). */
  readonly type: FileType;
  /** Size in bytes (0 for directories on some backends). */
  readonly size: number;
  /** Last modification time, in milliseconds since the epoch. */
  readonly mtimeMs: number;
  /** Permission bits (`0o644`). */
  readonly mode: number;
}

/** One entry of {@link Sandbox.list}. `type` describes the entry itself (a link is `symlink`). */
export interface DirEntry {
  /** The entry's name, without its directory. */
  readonly name: string;
  /** What the entry is; a link is `symlink` (not followed). */
  readonly type: FileType;
  /** Size in bytes (of the link itself for a link). */
  readonly size: number;
  /** Last modification time, in milliseconds since the epoch. */
  readonly mtimeMs: number;
}

/** Common options of file operations. */
export interface FileOptions {
  /** Aborting stops the operation and rejects with `ABORTED`. */
  signal?: AbortSignal;
}

/** Options of {@link Sandbox.readFile}. */
export interface ReadFileOptions extends FileOptions {
  /**
   * The most bytes to return; a longer file (or a FIFO or device that keeps giving) fails with
   * `LIMIT_EXCEEDED` without more than this held. Default: 256 MiB on a workspace's sandbox;
   * `Infinity` lifts it. A backend's own sandbox object may ignore it (the workspace applies it).
   */
  maxBytes?: number;
}

/** Options of {@link Sandbox.writeFile} and {@link Sandbox.writeStream}. */
export interface WriteOptions extends FileOptions {
  /**
   * Permission bits of the written file. Default: a replaced file keeps its own; a new one gets
   * `0o644` (less the umask on some backends).
   */
  mode?: number;
}

/** Options of {@link Sandbox.remove}. */
export interface RemoveOptions extends FileOptions {
  /** Remove a directory and everything below it. Without it a directory is refused (`IS_A_DIRECTORY`). */
  recursive?: boolean;
  /** A missing path is not an error. */
  force?: boolean;
}

/** Options of {@link Sandbox.mkdir}. */
export interface MkdirOptions extends FileOptions {
  /** Create missing parents, and accept an existing directory. */
  recursive?: boolean;
}

/** Options of {@link Sandbox.readStream}. */
export interface ReadStreamOptions extends FileOptions {
  /** Preferred chunk size in bytes; a hint. Default: 1 MiB. */
  chunkSize?: number;
}

/** Options of {@link Sandbox.spawn}. */
export interface SpawnOptions {
  /** Working directory; relative paths resolve against the workdir. Default: the workdir. */
  cwd?: string;
  /** Variables added to the process's environment. */
  env?: Readonly<Record<string, string>>;
  /** Aborting kills the process group. */
  signal?: AbortSignal;
}

/** How a spawned process ended. */
export interface ProcessExit {
  /** The exit code; 128 + the signal's number when a signal ended it, -1 when unknown. */
  readonly exitCode: number;
  /** The signal that ended it (`SIGTERM`), when one did and the backend knows it. */
  readonly signal?: string | undefined;
}

/** A long-lived process in the sandbox (an MCP stdio server, a dev server). */
export interface SandboxProcess extends AsyncDisposable {
  /** The process id inside the sandbox, when the backend knows it. */
  readonly pid: number | undefined;
  /** Standard output as it arrives. Consume it, or the process may block on a full pipe. */
  readonly stdout: AsyncIterable<Uint8Array>;
  /** Standard error as it arrives. */
  readonly stderr: AsyncIterable<Uint8Array>;
  /** Writes to standard input; resolves when the bytes were accepted. */
  write(chunk: Uint8Array | string): Promise<void>;
  /** Closes standard input (end of file for the process). Idempotent. */
  closeStdin(): Promise<void>;
  /** Sends `signal` (default `SIGTERM`) to the whole process group. Idempotent after exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Settles when the process has exited. */
  readonly exited: Promise<ProcessExit>;
}

/** The optional operations, by name. */
export type SandboxOperation =
  | 'stat'
  | 'list'
  | 'remove'
  | 'mkdir'
  | 'rename'
  | 'readStream'
  | 'writeStream'
  | 'spawn';

/**
 * Which optional operations a sandbox implements natively (`true`). On a {@link CompleteSandbox}
 * it says which ones are available at all, natively or through core's fallbacks.
 */
export type SandboxCapabilities = Readonly<Record<SandboxOperation, boolean>>;

/** The contract a backend implements. See the module comment for the rules. */
export interface Sandbox {
  /** The backend's name (`"local"`, `"docker"`, …). */
  readonly backend: string;
  /** The absolute path that relative paths and the default `cwd` resolve against. */
  readonly workdir: string;
  /** Which optional operations this sandbox implements natively (core supplies the rest). */
  readonly capabilities: SandboxCapabilities;

  /**
   * Runs `argv` (never a shell string: use `['sh', '-c', script]` to get a shell) and resolves with
   * its result once it has exited and its output has been read.
   *
   * @throws WsError `INVALID_ARGUMENT` for an empty argv or one holding NUL; `NOT_FOUND` when `cwd`
   *   does not exist; `ABORTED` when `signal` fires (the process group is killed first);
   *   `BACKEND_UNAVAILABLE` when the sandbox is gone.
   */
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;

  /**
   * Reads a whole file, at most `maxBytes` of it (on a workspace's sandbox: 256 MiB by default).
   * @throws WsError `NOT_FOUND`, `IS_A_DIRECTORY`, `PERMISSION_DENIED`; `LIMIT_EXCEEDED` past `maxBytes`.
   */
  readFile(path: string, options?: ReadFileOptions): Promise<Uint8Array>;

  /**
   * Writes a whole file, replacing it, creating missing parent directories. A string is written as UTF-8.
   * The file is replaced whole or not at all: the bytes go to a new file beside the target (where its
   * symbolic links lead), renamed over it once complete, so a reader, or a writer killed halfway,
   * never leaves it torn. Without `mode`, a replaced file keeps its permission bits.
   * @throws WsError `IS_A_DIRECTORY`, `NOT_A_DIRECTORY` (a parent is a file), `PERMISSION_DENIED`.
   */
  writeFile(path: string, data: Uint8Array | string, options?: WriteOptions): Promise<void>;

  /** Describes a path, following symbolic links. @throws WsError `NOT_FOUND`. */
  stat?(path: string, options?: FileOptions): Promise<FileStat>;
  /** Lists a directory's entries (not recursive, unsorted). @throws WsError `NOT_FOUND`, `NOT_A_DIRECTORY`. */
  list?(path: string, options?: FileOptions): Promise<DirEntry[]>;
  /** Removes a file, a link, or with `recursive` a directory tree. @throws WsError `NOT_FOUND` unless `force`. */
  remove?(path: string, options?: RemoveOptions): Promise<void>;
  /** Creates a directory. @throws WsError `ALREADY_EXISTS` (without `recursive`), `NOT_FOUND` (missing parent). */
  mkdir?(path: string, options?: MkdirOptions): Promise<void>;
  /** Renames within the sandbox, replacing a file at `to`. @throws WsError `NOT_FOUND`. */
  rename?(from: string, to: string, options?: FileOptions): Promise<void>;
  /** Opens a file for streaming reads; fails before yielding anything when it is missing. */
  readStream?(path: string, options?: ReadStreamOptions): Promise<AsyncIterable<Uint8Array>>;
  /** Writes a file from a stream without holding it in memory; creates parents; replaces it whole or not at all, like `writeFile`. */
  writeStream?(path: string, source: AsyncIterable<Uint8Array>, options?: WriteOptions): Promise<void>;
  /** Starts a long-lived process in its own process group. */
  spawn?(argv: readonly string[], options?: SpawnOptions): Promise<SandboxProcess>;
}

/** A sandbox on which every optional operation is present (natively or through a fallback). */
export interface CompleteSandbox extends Sandbox {
  /** Which operations the backend implements natively; the rest use core's POSIX fallbacks. */
  readonly native: SandboxCapabilities;
  /** Describes a path, following symbolic links. @throws WsError `NOT_FOUND`. */
  stat(path: string, options?: FileOptions): Promise<FileStat>;
  /** Lists a directory's entries (not recursive, unsorted). @throws WsError `NOT_FOUND`, `NOT_A_DIRECTORY`. */
  list(path: string, options?: FileOptions): Promise<DirEntry[]>;
  /** Removes a file, a link, or with `recursive` a directory tree. @throws WsError `NOT_FOUND` unless `force`. */
  remove(path: string, options?: RemoveOptions): Promise<void>;
  /** Creates a directory. @throws WsError `ALREADY_EXISTS` (without `recursive`), `NOT_FOUND` (missing parent). */
  mkdir(path: string, options?: MkdirOptions): Promise<void>;
  /** Renames within the sandbox, replacing a file at `to`. @throws WsError `NOT_FOUND`. */
  rename(from: string, to: string, options?: FileOptions): Promise<void>;
  /** Opens a file for streaming reads; fails before yielding anything when it is missing. */
  readStream(path: string, options?: ReadStreamOptions): Promise<AsyncIterable<Uint8Array>>;
  /** Writes a file from a stream without holding it in memory, whole or not at all. */
  writeStream(path: string, source: AsyncIterable<Uint8Array>, options?: WriteOptions): Promise<void>;
  /** @throws WsError `CAPABILITY_UNSUPPORTED` when `capabilities.spawn` is false. */
  spawn(argv: readonly string[], options?: SpawnOptions): Promise<SandboxProcess>;
  /** True when `path` exists (following links). Never throws `NOT_FOUND`. */
  exists(path: string, options?: FileOptions): Promise<boolean>;
}
