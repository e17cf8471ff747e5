import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type Docker from 'dockerode';
import { type RunResult, runExec, streamStdout } from '../docker/exec.js';
import { DaytonaHttpError } from './errors.js';
import type { SandboxAccount } from './sandbox-user.js';
import type { FileInfoBody, MatchBody } from './sdk-types.js';

/** The toolbox's `FileInfo`, with its path always given. */
export type FileInfo = FileInfoBody & { path: string };

// Each operation is one `sh` run as the sandbox's user, with the paths as arguments (never in the
// script). `entries` prints, NUL-separated, 8 fields per entry: type, size, ls-style mode, octal mode,
// owner, group, mtime (epoch seconds) and path. Exit codes: 10 missing, 12 wrong kind, 13 not empty.
const PRELUDE = String.raw`entries() { find "$@" -printf '%y\0%s\0%M\0%m\0%u\0%g\0%T@\0%p\0'; }
`;
const STAT = `[ -e "$1" ] || [ -L "$1" ] || exit 10
entries "$1" -maxdepth 0`;
const LIST = `[ -e "$1" ] || exit 10
[ -d "$1" ] || exit 12
entries "$1" -mindepth 1 -maxdepth "$2"`;
const MAKE_DIR = `[ -e "$1" ] && [ ! -d "$1" ] && exit 12
mkdir -p -m "$2" -- "$1"`;
const DELETE = `[ -e "$1" ] || [ -L "$1" ] || exit 10
if [ "$2" = true ]; then rm -rf -- "$1"
elif [ -d "$1" ] && [ ! -L "$1" ]; then rmdir -- "$1" 2>/dev/null || exit 13
else rm -f -- "$1"; fi`;
const MOVE = `[ -e "$1" ] || [ -L "$1" ] || exit 10
mv -T -- "$1" "$2"`;
const PERMISSIONS = `[ -e "$1" ] || exit 10
if [ -n "$2" ]; then chmod "$2" -- "$1" || exit 1; fi
if [ -n "$3" ]; then chown -- "$3" "$1" || exit 1; fi`;
const FIND = `[ -e "$1" ] || exit 10
grep -rnIF --null -e "$2" -- "$1"
[ $? -le 1 ]`;
const SEARCH = `[ -e "$1" ] || exit 10
find "$1" -name "$2" -print0`;
const PROBE = `[ -e "$1" ] || exit 10
[ -d "$1" ] && exit 12
[ -r "$1" ] || { echo "$1: Permission denied" >&2; exit 1; }
exit 0`;
// An upload goes to a new file beside the target, which replaces the target only once all of it is in.
const UPLOAD_BEGIN = `dir=$(dirname -- "$1")
mkdir -p -- "$dir" || exit 1
[ -d "$1" ] && exit 12
(set -C; : > "$2") || exit 1
cat > "$2" || { rm -f -- "$2"; exit 1; }`;
const UPLOAD_COMMIT = `if [ -f "$2" ]; then chmod --reference="$2" -- "$1" 2>/dev/null; else chmod 644 -- "$1"; fi
mv -f -T -- "$1" "$2" || { rm -f -- "$1"; exit 1; }`;
const UPLOAD_ABORT = `rm -f -- "$1"`;

/** Go's `time.Time.String()` of a UTC instant (what the daemon puts in `modTime`). */
function goTime(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)} +0000 UTC`;
}

function parseEntries(output: Buffer): FileInfo[] {
  const fields = output.toString('utf8').split('\0');
  const entries: FileInfo[] = [];
  for (let index = 0; index + 8 <= fields.length; index += 8) {
    const [type = '', size = '0', mode = '', octal = '0', owner = '', group = '', mtime = '0', path = ''] =
      fields.slice(index, index + 8);
    const modified = new Date(Math.round(Number(mtime) * 1000) || 0);
    const entry: FileInfo = {
      name: posix.basename(path) || path,
      isDir: type === 'd',
      size: Number(size) || 0,
      mode,
      permissions: `0${(Number.parseInt(octal, 8) & 0o777).toString(8).padStart(3, '0')}`,
      owner,
      group,
      modTime: goTime(modified),
      modifiedAt: modified.toISOString(),
      path,
    };
    entries.push(entry);
  }
  return entries;
}

/** The daemon's answer to a failed operation (status and message from the script's exit). */
function failure(result: RunResult, path: string): DaytonaHttpError {
  const stderr = result.stderr.toString('utf8').trim();
  if (result.exitCode === 10) return new DaytonaHttpError(404, `file not found: ${path}`, 'FILE_NOT_FOUND');
  if (result.exitCode === 12) return new DaytonaHttpError(400, `${path}: is a directory or not a directory`);
  if (result.exitCode === 13) return new DaytonaHttpError(400, `${path}: directory not empty`);
  if (/permission denied|operation not permitted/i.test(stderr))
    return new DaytonaHttpError(403, stderr, 'FILE_ACCESS_DENIED');
  return new DaytonaHttpError(400, stderr || `operation on ${path} failed (exit status ${result.exitCode})`);
}

/** The toolbox's file operations in one sandbox, as its user. */
export class FileOps {
  constructor(
    private readonly container: Docker.Container,
    private readonly account: SandboxAccount,
  ) {}

  private async run(
    script: string,
    args: readonly string[],
    input?: Uint8Array | AsyncIterable<Uint8Array>,
  ): Promise<RunResult> {
    return runExec(this.container, ['sh', '-c', PRELUDE + script, 'sh', ...args], {
      user: this.account.name,
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
    if (!entry) throw new DaytonaHttpError(404, `file not found: ${path}`, 'FILE_NOT_FOUND');
    return entry;
  }

  async list(path: string, depth: number): Promise<FileInfo[]> {
    const entries = parseEntries((await this.checked(LIST, [path, String(depth)])).stdout);
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async makeDir(path: string, mode: string): Promise<void> {
    await this.checked(MAKE_DIR, [path, mode]);
  }

  async remove(path: string, recursive: boolean): Promise<void> {
    await this.checked(DELETE, [path, String(recursive)]);
  }

  async move(source: string, destination: string): Promise<void> {
    await this.checked(MOVE, [source, destination]);
  }

  async setPermissions(path: string, mode: string, owner: string, group: string): Promise<void> {
    const ownership = owner || group ? `${owner}${group ? `:${group}` : ''}` : '';
    await this.checked(PERMISSIONS, [path, mode, ownership]);
  }

  /** Lines holding `pattern` (a plain string) in the text files under `path`. */
  async find(path: string, pattern: string): Promise<MatchBody[]> {
    const output = (await this.checked(FIND, [path, pattern])).stdout;
    const matches: MatchBody[] = [];
    let offset = 0;
    while (offset < output.length) {
      const nul = output.indexOf(0, offset);
      if (nul < 0) break;
      const colon = output.indexOf(0x3a, nul + 1);
      const newline = output.indexOf(0x0a, colon + 1);
      if (colon < 0) break;
      const end = newline < 0 ? output.length : newline;
      matches.push({
        file: output.toString('utf8', offset, nul),
        line: Number(output.toString('ascii', nul + 1, colon)),
        content: output.toString('utf8', colon + 1, end),
      });
      offset = end + 1;
    }
    return matches;
  }

  /** Paths under `path` whose name matches the glob `pattern`. */
  async search(path: string, pattern: string): Promise<string[]> {
    const output = (await this.checked(SEARCH, [path, pattern])).stdout.toString('utf8');
    return output.split('\0').filter((item) => item !== '');
  }

  /** Throws the daemon's error when `path` cannot be downloaded (a directory: `INVALID_FILE_PATH`). */
  async checkReadable(path: string): Promise<void> {
    const result = await this.run(PROBE, [path]);
    if (result.exitCode === 12)
      throw new DaytonaHttpError(
        400,
        `invalid file path: path points to a directory: ${path}`,
        'INVALID_FILE_PATH',
      );
    if (result.exitCode !== 0) throw failure(result, path);
  }

  read(path: string): ReturnType<typeof streamStdout> {
    return streamStdout(this.container, ['cat', '--', path], { user: this.account.name });
  }

  /** Replaces `path` with `content` whole, or leaves it as it was (a temporary file, then a rename). */
  async write(path: string, content: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
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
    const commit = await this.run(UPLOAD_COMMIT, [temporary, path]);
    if (commit.exitCode !== 0) throw failure(commit, path);
  }
}
