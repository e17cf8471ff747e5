import { throwIfAborted, WsError, type WsErrorCode } from '../contracts/errors.js';
import type {
  CompleteSandbox,
  DirEntry,
  ExecResult,
  FileOptions,
  FileStat,
  FileType,
  MkdirOptions,
  ReadStreamOptions,
  RemoveOptions,
  Sandbox,
  SandboxCapabilities,
  SandboxOperation,
  SandboxProcess,
  SpawnOptions,
  WriteOptions,
} from '../contracts/sandbox.js';
import { decodeUtf8 } from './exec-result.js';
import { resolveSandboxPath } from './paths.js';
import { ChunkQueue } from './streams.js';
import { POSIX_WRITE_SCRIPTS } from './write-through-temporary.js';

// `@ws/core/backend` (backend.ts) exports these from here.

// The fallbacks are small `sh` scripts that take every path as a positional argument ("$1"), so no
// user input is ever spliced into shell text. They report what went wrong through exit codes that
// no POSIX tool uses for these cases, and core maps the codes back to WsError codes.
const EXIT_CODES: Readonly<Record<number, WsErrorCode>> = {
  65: 'INVALID_ARGUMENT',
  66: 'NOT_FOUND',
  67: 'IS_A_DIRECTORY',
  68: 'NOT_A_DIRECTORY',
  69: 'ALREADY_EXISTS',
  70: 'CONFLICT',
  77: 'PERMISSION_DENIED',
};

const SCRIPTS = {
  // GNU find prints type, size, mtime and mode; -L follows links like stat(2).
  stat: `[ -e "$1" ] || exit 66
exec find -L "$1" -maxdepth 0 -printf '%y\\t%s\\t%T@\\t%m'`,
  list: `[ -e "$1" ] || exit 66
[ -d "$1" ] || exit 68
exec find "$1" -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%T@\\t%f\\0'`,
  remove: `if [ ! -e "$1" ] && [ ! -L "$1" ]; then [ "$2" = force ] && exit 0; exit 66; fi
if [ -d "$1" ] && [ ! -L "$1" ]; then [ "$3" = recursive ] || exit 67; exec rm -rf -- "$1"; fi
exec rm -f -- "$1"`,
  mkdir: `if [ -e "$1" ]; then [ -d "$1" ] || exit 69; [ "$2" = recursive ] && exit 0; exit 69; fi
if [ "$2" = recursive ]; then exec mkdir -p -- "$1"; fi
[ -d "$(dirname -- "$1")" ] || exit 66
exec mkdir -- "$1"`,
  rename: `[ -e "$1" ] || [ -L "$1" ] || exit 66
if [ -d "$2" ] && [ ! -L "$2" ] && [ ! -d "$1" ]; then exit 67; fi
exec mv -f -T -- "$1" "$2"`,
  readStream: `[ -e "$1" ] || exit 66
[ -d "$1" ] && exit 67
exec cat -- "$1"`,
  writeStream: `${POSIX_WRITE_SCRIPTS.prepare}
exec cat > "$t"`,
  commit: POSIX_WRITE_SCRIPTS.commit,
} as const;

function typeFromFind(letter: string): FileType {
  if (letter === 'f') return 'file';
  if (letter === 'd') return 'directory';
  if (letter === 'l') return 'symlink';
  return 'other';
}

function check(result: ExecResult, operation: string, path: string): void {
  if (result.exitCode === 0) return;
  const code = EXIT_CODES[result.exitCode] ?? 'BACKEND_ERROR';
  const reason = result.stderrText.trim() || `exit code ${result.exitCode}`;
  const message =
    code === 'BACKEND_ERROR'
      ? `${operation} ${path} failed: ${reason}`
      : `${operation} ${path}: ${code.toLowerCase().replaceAll('_', ' ')}`;
  throw new WsError(code, message, {
    details: { path, exitCode: result.exitCode, stderr: result.stderrText },
  });
}

/** The natives a sandbox declares, or `false` for each that it lacks. */
function nativeOf(sandbox: Sandbox): SandboxCapabilities {
  const names: SandboxOperation[] = [
    'stat',
    'list',
    'remove',
    'mkdir',
    'rename',
    'readStream',
    'writeStream',
    'spawn',
  ];
  const native = {} as Record<SandboxOperation, boolean>;
  for (const name of names)
    native[name] = sandbox.capabilities[name] === true && typeof sandbox[name] === 'function';
  return native;
}

/**
 * Returns a {@link CompleteSandbox} over `sandbox`: its native operations are used as they are, and
 * each missing one is built from `exec` with POSIX tools (`sh`, GNU `find`, `cat`, `mv`, `rm`,
 * `mkdir`). `spawn` has no fallback: without a native one it throws `CAPABILITY_UNSUPPORTED`.
 * Calling it on a sandbox that is already complete returns that sandbox.
 */
export function completeSandbox(sandbox: Sandbox): CompleteSandbox {
  if (isComplete(sandbox)) return sandbox;
  const native = nativeOf(sandbox);
  const resolve = (path: string): string => resolveSandboxPath(sandbox.workdir, path);
  const script = async (
    name: keyof typeof SCRIPTS,
    args: string[],
    options: { signal?: AbortSignal | undefined; stdin?: AsyncIterable<Uint8Array> } = {},
  ): Promise<ExecResult> =>
    sandbox.exec(['sh', '-c', SCRIPTS[name], 'sh', ...args], {
      cwd: '/',
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.stdin ? { stdin: options.stdin } : {}),
    });

  const fallbacks = {
    async stat(path: string, options: FileOptions = {}): Promise<FileStat> {
      const target = resolve(path);
      const result = await script('stat', [target], options);
      check(result, 'stat', target);
      const [type = '', size = '0', mtime = '0', mode = '0'] = result.stdoutText.split('\t');
      return {
        type: typeFromFind(type),
        size: Number(size),
        mtimeMs: Math.round(Number(mtime) * 1000),
        mode: Number.parseInt(mode, 8),
      };
    },
    async list(path: string, options: FileOptions = {}): Promise<DirEntry[]> {
      const target = resolve(path);
      const result = await script('list', [target], options);
      check(result, 'list', target);
      // Names are NUL-terminated: a name may hold tabs and newlines, never NUL. Bytes that are not
      // UTF-8 are decoded with U+FFFD, as everywhere else in @ws.
      const text = decodeUtf8(result.stdout);
      const entries: DirEntry[] = [];
      for (const record of text.split('\0')) {
        if (record === '') continue;
        const [type = '', size = '0', mtime = '0', ...rest] = record.split('\t');
        entries.push({
          name: rest.join('\t'),
          type: typeFromFind(type),
          size: Number(size),
          mtimeMs: Math.round(Number(mtime) * 1000),
        });
      }
      return entries;
    },
    async remove(path: string, options: RemoveOptions = {}): Promise<void> {
      const target = resolve(path);
      if (target === '/') throw new WsError('INVALID_ARGUMENT', 'Refusing to remove /');
      const result = await script(
        'remove',
        [target, options.force ? 'force' : '', options.recursive ? 'recursive' : ''],
        options,
      );
      check(result, 'remove', target);
    },
    async mkdir(path: string, options: MkdirOptions = {}): Promise<void> {
      const target = resolve(path);
      const result = await script('mkdir', [target, options.recursive ? 'recursive' : ''], options);
      check(result, 'mkdir', target);
    },
    async rename(from: string, to: string, options: FileOptions = {}): Promise<void> {
      const source = resolve(from);
      const result = await script('rename', [source, resolve(to)], options);
      check(result, 'rename', source);
    },
    async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
      throwIfAborted(options.signal);
      const target = resolve(path);
      // Check first so that a missing file fails here, not halfway through the caller's loop.
      const probe = await fallbacks.stat(target, options);
      if (probe.type === 'directory')
        throw new WsError('IS_A_DIRECTORY', `readStream ${target}: is a directory`, {
          details: { path: target },
        });
      const queue = new ChunkQueue();
      const controller = new AbortController();
      const onAbort = () => controller.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      // An abort while the file was being looked up fired no listener: act on it now.
      if (options.signal?.aborted) onAbort();
      sandbox
        .exec(['sh', '-c', SCRIPTS.readStream, 'sh', target], {
          cwd: '/',
          signal: controller.signal,
          maxOutputBytes: 64 * 1024,
          onStdout: (chunk) => queue.push(chunk),
        })
        .then(
          (result) => {
            try {
              check(result, 'readStream', target);
              queue.end();
            } catch (error) {
              queue.fail(error);
            }
          },
          (error: unknown) => queue.fail(error),
        )
        .finally(() => options.signal?.removeEventListener('abort', onAbort));
      return queue.iterate(() => controller.abort());
    },
    async writeStream(
      path: string,
      source: AsyncIterable<Uint8Array>,
      options: WriteOptions = {},
    ): Promise<void> {
      const target = resolve(path);
      const written = await script('writeStream', [target], { signal: options.signal, stdin: source });
      const [resolved = '', temporary = ''] = decodeUtf8(written.stdout).split('\0');
      try {
        check(written, 'writeStream', target);
        const mode = options.mode !== undefined ? options.mode.toString(8) : '';
        check(await script('commit', [resolved, temporary, mode], options), 'writeStream', target);
      } catch (error) {
        if (temporary) await sandbox.exec(['rm', '-f', '--', temporary], { cwd: '/' }).catch(() => {});
        throw error;
      }
    },
    async spawn(_argv: readonly string[], _options?: SpawnOptions): Promise<SandboxProcess> {
      throw new WsError(
        'CAPABILITY_UNSUPPORTED',
        `The ${sandbox.backend} backend cannot spawn long-lived processes`,
        {
          details: { backend: sandbox.backend, operation: 'spawn' },
        },
      );
    },
  };

  const pick = <K extends SandboxOperation>(name: K): (typeof fallbacks)[K] => {
    if (!native[name]) return fallbacks[name];
    const method = sandbox[name] as unknown as (...args: unknown[]) => unknown;
    return ((...args: unknown[]) => method.apply(sandbox, args)) as (typeof fallbacks)[K];
  };

  const statOf = pick('stat');
  const complete: CompleteSandbox = {
    get backend() {
      return sandbox.backend;
    },
    get workdir() {
      return sandbox.workdir;
    },
    capabilities: {
      stat: true,
      list: true,
      remove: true,
      mkdir: true,
      rename: true,
      readStream: true,
      writeStream: true,
      spawn: native.spawn,
    },
    native,
    exec: sandbox.exec.bind(sandbox),
    readFile: sandbox.readFile.bind(sandbox),
    writeFile: sandbox.writeFile.bind(sandbox),
    stat: statOf,
    list: pick('list'),
    remove: pick('remove'),
    mkdir: pick('mkdir'),
    rename: pick('rename'),
    readStream: pick('readStream'),
    writeStream: pick('writeStream'),
    spawn: pick('spawn'),
    async exists(path: string, options: FileOptions = {}): Promise<boolean> {
      try {
        await statOf(path, options);
        return true;
      } catch (error) {
        if (error instanceof WsError && error.code === 'NOT_FOUND') return false;
        throw error;
      }
    },
  };
  return complete;
}

function isComplete(sandbox: Sandbox): sandbox is CompleteSandbox {
  return 'native' in sandbox && typeof (sandbox as CompleteSandbox).exists === 'function';
}
