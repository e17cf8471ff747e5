import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type Docker from 'dockerode';
import { type RunResult, runExec, streamStdout } from '../docker/exec.js';
import { OpenSandboxHttpError } from './errors.js';

/** execd's `FileInfo`; `mode` is the octal permission digits read as a decimal number (644). */
export interface FileInfo {
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modified_at: string;
  created_at: string;
  owner: string;
  group: string;
  mode: number;
}

// Each operation is one `sh` run in the sandbox, with the paths as arguments (never in the script).
// `entries` prints, NUL-separated, 8 fields per entry: type, size, octal mode, owner, group, mtime,
// ctime (epoch seconds) and path. Exit codes: 10 missing, 12 wrong kind.
const PRELUDE = String.raw`entries() { find "$@" -printf '%y\0%s\0%m\0%u\0%g\0%T@\0%C@\0%p\0'; }
`;
const STAT = `[ -e "$1" ] || [ -L "$1" ] || exit 10
entries "$1" -maxdepth 0`;
const LIST = `[ -e "$1" ] || exit 10
[ -d "$1" ] || exit 12
entries "$1" -mindepth 1 -maxdepth "$2"`;
const SEARCH = `[ -d "$1" ] || exit 10
case "$2" in */*) entries "$1" -mindepth 1 -path "$1/$2" ;; *) entries "$1" -mindepth 1 -name "$2" ;; esac`;
const MAKE_DIR = `[ -e "$1" ] && [ ! -d "$1" ] && exit 12
mkdir -p -- "$1" && chmod "$2" -- "$1" || exit 1
if [ -n "$3" ]; then chown -- "$3" "$1" || exit 1; fi`;
const DELETE_FILE = `[ -e "$1" ] || [ -L "$1" ] || exit 10
[ -d "$1" ] && [ ! -L "$1" ] && exit 12
rm -f -- "$1"`;
const DELETE_DIR = `[ -e "$1" ] || exit 10
[ -d "$1" ] || exit 12
rm -rf -- "$1"`;
const MOVE = `[ -e "$1" ] || [ -L "$1" ] || exit 10
mkdir -p -- "$(dirname -- "$2")" && mv -T -- "$1" "$2"`;
const PERMISSIONS = `[ -e "$1" ] || exit 10
chmod "$2" -- "$1" || exit 1
if [ -n "$3" ]; then chown -- "$3" "$1" || exit 1; fi`;
const PROBE = `[ -e "$1" ] || exit 10
[ -d "$1" ] && exit 12
[ -r "$1" ] || { echo "$1: Permission denied" >&2; exit 1; }
exit 0`;
const READ_RANGE = `tail -c +"$2" -- "$1" | head -c "$3"`;
// An upload goes to a new file beside the target, which replaces it only once all of it is in.
const UPLOAD_BEGIN = `mkdir -p -- "$(dirname -- "$1")" || exit 1
[ -d "$1" ] && exit 12
(set -C; : > "$2") || exit 1
cat > "$2" || { rm -f -- "$2"; exit 1; }`;
const UPLOAD_COMMIT = `if [ -n "$3" ]; then chmod "$3" -- "$1"
elif [ -f "$2" ]; then chmod --reference="$2" -- "$1"
else chmod 644 -- "$1"; fi || { rm -f -- "$1"; exit 1; }
if [ -n "$4" ]; then chown -- "$4" "$1" || { rm -f -- "$1"; exit 1; }; fi
mv -f -T -- "$1" "$2" || { rm -f -- "$1"; exit 1; }`;
const UPLOAD_ABORT = `rm -f -- "$1"`;

const TYPES: Readonly<Record<string, FileInfo['type']>> = { f: 'file', d: 'directory', l: 'symlink' };

function isoOf(epochSeconds: string): string {
  return new Date(Math.round(Number(epochSeconds) * 1000) || 0).toISOString();
}

function parseEntries(output: Buffer): FileInfo[] {
  const fields = output.toString('utf8').split('\0');
  const entries: FileInfo[] = [];
  for (let index = 0; index + 8 <= fields.length; index += 8) {
    const [type = '', size = '0', mode = '0', owner = '', group = '', mtime = '0', ctime = '0', path = ''] =
      fields.slice(index, index + 8);
    entries.push({
      path,
      type: TYPES[type] ?? 'other',
      size: Number(size) || 0,
      modified_at: isoOf(mtime),
      created_at: isoOf(ctime),
      owner,
      group,
      mode: Number((Number.parseInt(mode, 8) & 0o7777).toString(8)),
    });
  }
  return entries;
}

/** An OpenSandbox mode (octal digits as a decimal number, 755) as chmod's octal text; undefined: none. */
export function modeText(mode: unknown): string | undefined {
  if (mode === undefined || mode === null) return undefined;
  const text = String(mode);
  if (!/^[0-7]{1,4}$/.test(text))
    throw new OpenSandboxHttpError(400, 'INVALID_REQUEST', `invalid mode ${text}`);
  return text;
}

/** `owner[:group]` for chown, or '' for neither. */
export function ownership(owner: unknown, group: unknown): string {
  const name = (value: unknown, field: string): string => {
    if (value === undefined || value === null || value === '') return '';
    if (typeof value !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(value))
      throw new OpenSandboxHttpError(400, 'INVALID_REQUEST', `invalid ${field} ${JSON.stringify(value)}`);
    return value;
  };
  const user = name(owner, 'owner');
  const team = name(group, 'group');
  return team === '' ? user : `${user}:${team}`;
}

function failure(result: RunResult, path: string): OpenSandboxHttpError {
  const stderr = result.stderr.toString('utf8').trim();
  if (result.exitCode === 10)
    return new OpenSandboxHttpError(404, 'FILE_NOT_FOUND', `file not found: ${path}`);
  if (result.exitCode === 12)
    return new OpenSandboxHttpError(400, 'INVALID_FILE_TYPE', `${path}: is a directory or not a directory`);
  if (/permission denied|operation not permitted/i.test(stderr))
    return new OpenSandboxHttpError(403, 'PERMISSION_DENIED', stderr);
  return new OpenSandboxHttpError(
    500,
    'RUNTIME_ERROR',
    stderr || `operation on ${path} failed (exit status ${result.exitCode})`,
  );
}

/** execd's file operations in one sandbox, as the image's user. */
export class FileOps {
  constructor(private readonly container: Docker.Container) {}

  private run(
    script: string,
    args: readonly string[],
    input?: Uint8Array | AsyncIterable<Uint8Array>,
  ): Promise<RunResult> {
    return runExec(this.container, ['sh', '-c', PRELUDE + script, 'sh', ...args], {
      ...(input !== undefined ? { input } : {}),
    });
  }

  private async checked(script: string, args: readonly string[]): Promise<RunResult> {
    const result = await this.run(script, args);
    if (result.exitCode !== 0) throw failure(result, args[0] ?? '');
    return result;
  }

  async info(path: string): Promise<FileInfo> {
    const entry = parseEntries((await this.checked(STAT, [path])).stdout)[0];
    if (!entry) throw new OpenSandboxHttpError(404, 'FILE_NOT_FOUND', `file not found: ${path}`);
    return entry;
  }

  async list(path: string, depth: number): Promise<FileInfo[]> {
    const entries = parseEntries((await this.checked(LIST, [path, String(depth)])).stdout);
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** Entries under `path` whose name (or, with a `/`, relative path) matches the glob `pattern`. */
  async search(path: string, pattern: string): Promise<FileInfo[]> {
    const root = path.length > 1 ? path.replace(/\/+$/, '') : path;
    const entries = parseEntries((await this.checked(SEARCH, [root, pattern])).stdout);
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async makeDir(path: string, mode: string, owner: string): Promise<void> {
    await this.checked(MAKE_DIR, [path, mode, owner]);
  }

  async deleteFile(path: string): Promise<void> {
    await this.checked(DELETE_FILE, [path]);
  }

  async deleteDir(path: string): Promise<void> {
    await this.checked(DELETE_DIR, [path]);
  }

  async move(source: string, destination: string): Promise<void> {
    await this.checked(MOVE, [source, destination]);
  }

  async setPermissions(path: string, mode: string, owner: string): Promise<void> {
    await this.checked(PERMISSIONS, [path, mode, owner]);
  }

  /** Throws execd's error when `path` cannot be downloaded. */
  async checkReadable(path: string): Promise<void> {
    await this.checked(PROBE, [path]);
  }

  /** The bytes of `path` from `start` (0-based), `length` of them or all the rest. */
  read(path: string, start = 0, length?: number): ReturnType<typeof streamStdout> {
    if (start === 0 && length === undefined) return streamStdout(this.container, ['cat', '--', path]);
    return streamStdout(this.container, [
      'sh',
      '-c',
      READ_RANGE,
      'sh',
      path,
      String(start + 1),
      String(length ?? Number.MAX_SAFE_INTEGER),
    ]);
  }

  /** The whole file, for small edits. */
  async readAll(path: string): Promise<Buffer> {
    await this.checkReadable(path);
    const { chunks, finished } = await this.read(path);
    const parts: Buffer[] = [];
    for await (const chunk of chunks) parts.push(chunk);
    const { exitCode, stderr } = await finished;
    if (exitCode !== 0) throw failure({ exitCode, stderr, stdout: Buffer.alloc(0) }, path);
    return Buffer.concat(parts);
  }

  /**
   * Replaces `path` with `content` whole, or leaves it as it was (a temporary file, then a rename). A new
   * file gets `mode` (default 644); a replaced one keeps its mode unless `mode` is given.
   */
  async write(
    path: string,
    content: Uint8Array | AsyncIterable<Uint8Array>,
    options: { mode?: string; owner?: string } = {},
  ): Promise<void> {
    const temporary = posix.join(posix.dirname(path), `.ws-upload.${randomBytes(8).toString('hex')}`);
    let result: RunResult;
    try {
      result = await this.run(UPLOAD_BEGIN, [path, temporary], content);
    } catch (error) {
      // The source failed (an upload cut short): only the temporary file was written.
      await this.run(UPLOAD_ABORT, [temporary]).catch(() => {});
      throw error;
    }
    if (result.exitCode !== 0) {
      await this.run(UPLOAD_ABORT, [temporary]).catch(() => {});
      throw failure(result, path);
    }
    const commit = await this.run(UPLOAD_COMMIT, [temporary, path, options.mode ?? '', options.owner ?? '']);
    if (commit.exitCode !== 0) throw failure(commit, path);
  }
}
