import { posix } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import type Docker from 'dockerode';
import { runExec, streamStdout } from '../docker/exec.js';
import type { Account } from './accounts.js';

/** `filesystem.FileType` values. */
export const FILE_TYPE = { unspecified: 0, file: 1, directory: 2, symlink: 3 } as const;

/** `filesystem.EntryInfo` in @bufbuild/protobuf's init shape. */
export interface EntryInfo {
  name: string;
  type: number;
  path: string;
  size: bigint;
  mode: number;
  permissions: string;
  owner: string;
  group: string;
  modifiedTime?: { seconds: bigint; nanos: number };
  symlinkTarget?: string;
}

// Every operation is one `sh` run as root in the container (envd runs as root too and hands what it
// creates to the requesting user). `entries` prints, NUL-separated, 8 fields per entry (lstat type,
// target type, size, octal mode, owner, group, mtime, path), then for each symbolic link "@link", the
// link, its resolved target and the target's octal mode.
const PRELUDE = String.raw`entries() {
  find "$@" -printf '%y\0%Y\0%s\0%m\0%u\0%g\0%T@\0%p\0' 2>/dev/null
  find "$@" -type l -exec sh -c 'for l; do t=$(readlink -f -- "$l") || t=$l; m=$(stat -L -c %a -- "$l" 2>/dev/null) || m=0; printf "@link\0%s\0%s\0%s\0" "$l" "$t" "$m"; done' sh {} + 2>/dev/null
  return 0
}
# Creates the directory $1 with its missing parents, handing the new ones to uid $2, gid $3.
ensure_dir() {
  [ -d "$1" ] && return 0
  top=$1
  while :; do up=$(dirname -- "$top"); [ -e "$up" ] && break; top=$up; done
  mkdir -p -- "$1" || exit 15
  [ "$2" = 0 ] || chown -R "$2:$3" -- "$top"
}
`;

const STAT = `[ -e "$1" ] || [ -L "$1" ] || exit 10
entries "$1" -maxdepth 0`;

const LIST = `[ -e "$1" ] || [ -L "$1" ] || exit 10
root=$(readlink -f -- "$1") || exit 10
[ -e "$root" ] || exit 10
[ -d "$root" ] || exit 12
entries "$root" -mindepth 1 -maxdepth "$2"`;

const MAKE_DIR = `[ -d "$1" ] && exit 11
{ [ -e "$1" ] || [ -L "$1" ]; } && exit 14
ensure_dir "$1" "$2" "$3"
entries "$1" -maxdepth 0`;

const MOVE = `[ -e "$1" ] || [ -L "$1" ] || exit 10
ensure_dir "$(dirname -- "$2")" "$3" "$4"
mv -T -- "$1" "$2" || exit 16
entries "$2" -maxdepth 0`;

const REMOVE = `rm -rf -- "$1" || exit 16`;

// For GET /files: "<kind> <size>" after following links (kind: file, directory, other), or exit 10.
const PROBE = `[ -e "$1" ] || exit 10
if [ -d "$1" ]; then echo "directory 0"; elif [ -f "$1" ]; then echo "file $(stat -L -c %s -- "$1")"; else echo "other 0"; fi`;

// For POST /files: parents created (for the user), stdin written over the file, the file handed over.
const WRITE = `ensure_dir "$(dirname -- "$1")" "$2" "$3"
[ -d "$1" ] && exit 12
cat > "$1" || exit 16
[ "$2" = 0 ] || chown "$2:$3" -- "$1"`;

function userOf(account: Account): string {
  return account.uid === 0 ? 'root' : `${account.uid}:${account.gid}`;
}

/** A failed file operation, for both the RPC (ConnectError) and the HTTP (status) side. */
export class FileOperationError extends ConnectError {
  constructor(
    message: string,
    code: Code,
    readonly httpStatus: number,
  ) {
    super(message, code);
  }
}

function failure(exitCode: number, path: string, stderr: string, action: string): FileOperationError {
  switch (exitCode) {
    case 10:
      return new FileOperationError(`file not found: ${path}: no such file or directory`, Code.NotFound, 404);
    case 11:
      return new FileOperationError(`directory already exists: ${path}`, Code.AlreadyExists, 409);
    case 12:
      return new FileOperationError(
        `path is a directory or not a directory as required: ${path}`,
        Code.InvalidArgument,
        400,
      );
    case 14:
      return new FileOperationError(
        `path already exists but it is not a directory: ${path}`,
        Code.InvalidArgument,
        400,
      );
    default:
      return new FileOperationError(
        `error ${action} ${path}: ${stderr.trim() || `exit status ${exitCode}`}`,
        Code.Internal,
        500,
      );
  }
}

/** Go's os.FileMode.String() for an lstat type letter of find(1) and an octal mode. */
export function goPermissions(findType: string, octalMode: number): string {
  let letters = '';
  if (findType === 'd') letters += 'd';
  if (findType === 'l') letters += 'L';
  if (findType === 'b' || findType === 'c') letters += 'D';
  if (findType === 'p') letters += 'p';
  if (findType === 's') letters += 'S';
  if (octalMode & 0o4000) letters += 'u';
  if (octalMode & 0o2000) letters += 'g';
  if (findType === 'c') letters += 'c';
  if (octalMode & 0o1000) letters += 't';
  const rwx = 'rwxrwxrwx';
  let bits = '';
  for (let index = 0; index < 9; index++) bits += octalMode & (1 << (8 - index)) ? rwx[index] : '-';
  return (letters || '-') + bits;
}

function typeOf(findType: string): number {
  if (findType === 'f') return FILE_TYPE.file;
  if (findType === 'd') return FILE_TYPE.directory;
  return FILE_TYPE.unspecified;
}

function timestampOf(value: string): { seconds: bigint; nanos: number } | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(value);
  if (!match?.[1]) return undefined;
  return { seconds: BigInt(match[1]), nanos: Number((match[2] ?? '').padEnd(9, '0').slice(0, 9)) };
}

/** Parses the output of `entries` (see PRELUDE). */
export function parseEntries(output: Buffer): EntryInfo[] {
  const fields = output.toString('utf8').split('\0');
  const entries: EntryInfo[] = [];
  const links = new Map<string, { target: string; mode: number }>();
  let index = 0;
  while (index < fields.length) {
    const head = fields[index] ?? '';
    if (head === '') {
      index++;
      continue;
    }
    if (head === '@link') {
      const [link = '', target = '', mode = '0'] = fields.slice(index + 1, index + 4);
      links.set(link, { target, mode: Number.parseInt(mode, 8) || 0 });
      index += 4;
      continue;
    }
    const [
      ownType = '',
      targetType = '',
      size = '0',
      mode = '0',
      owner = '',
      group = '',
      mtime = '',
      path = '',
    ] = fields.slice(index, index + 8);
    index += 8;
    const octalMode = Number.parseInt(mode, 8) || 0;
    const modifiedTime = timestampOf(mtime);
    entries.push({
      name: posix.basename(path) || path,
      type: ownType === 'l' ? typeOf(targetType) : typeOf(ownType),
      path,
      size: BigInt(size),
      mode: octalMode & 0o777,
      permissions: goPermissions(ownType, octalMode),
      owner,
      group,
      ...(modifiedTime ? { modifiedTime } : {}),
    });
  }
  for (const entry of entries) {
    const link = links.get(entry.path);
    if (!link) continue;
    entry.symlinkTarget = link.target;
    entry.mode = link.mode & 0o777;
  }
  return entries;
}

/** Orders entries as Go's filepath.WalkDir visits them (lexically, depth first). */
function walkOrder(left: EntryInfo, right: EntryInfo): number {
  const a = left.path.split('/');
  const b = right.path.split('/');
  for (let index = 0; index < Math.min(a.length, b.length); index++) {
    const x = a[index] ?? '';
    const y = b[index] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** envd's filesystem operations on one container. */
export class FilesystemOps {
  constructor(private readonly container: Docker.Container) {}

  // As envd, every operation runs as the requesting user (the container holds no capability that
  // would let root reach past a user's permissions).
  private async run(
    script: string,
    args: readonly string[],
    account: Account,
    input?: AsyncIterable<Uint8Array>,
  ) {
    return runExec(this.container, ['sh', '-c', PRELUDE + script, 'sh', ...args], {
      user: userOf(account),
      ...(input !== undefined ? { input } : {}),
    });
  }

  async stat(path: string, account: Account): Promise<EntryInfo> {
    const result = await this.run(STAT, [path], account);
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'reading');
    const entry = parseEntries(result.stdout)[0];
    if (!entry) throw failure(10, path, '', 'reading');
    return entry;
  }

  async list(path: string, depth: number, account: Account): Promise<EntryInfo[]> {
    const result = await this.run(LIST, [path, String(Math.max(1, depth))], account);
    if (result.exitCode === 12) {
      throw new FileOperationError(`path is not a directory: ${path}`, Code.InvalidArgument, 400);
    }
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'listing');
    return parseEntries(result.stdout).sort(walkOrder);
  }

  async makeDir(path: string, account: Account): Promise<EntryInfo> {
    const result = await this.run(MAKE_DIR, [path, String(account.uid), String(account.gid)], account);
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'creating');
    return parseEntries(result.stdout)[0] ?? { ...emptyEntry(path), type: FILE_TYPE.directory };
  }

  async move(source: string, destination: string, account: Account): Promise<EntryInfo> {
    const result = await this.run(
      MOVE,
      [source, destination, String(account.uid), String(account.gid)],
      account,
    );
    if (result.exitCode === 10) {
      throw new FileOperationError(`source file not found: ${source}`, Code.NotFound, 404);
    }
    if (result.exitCode !== 0) throw failure(result.exitCode, source, result.stderr.toString(), 'renaming');
    return parseEntries(result.stdout)[0] ?? emptyEntry(destination);
  }

  /** Removes a file or a directory tree; a missing path is no error (envd's os.RemoveAll). */
  async remove(path: string, account: Account): Promise<void> {
    const result = await this.run(REMOVE, [path], account);
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'removing');
  }

  /** What a path is, after following links, for a download. */
  async probe(
    path: string,
    account: Account,
  ): Promise<{ kind: 'file' | 'directory' | 'other'; size: number }> {
    const result = await this.run(PROBE, [path], account);
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'reading');
    const [kind, size] = result.stdout.toString('utf8').trim().split(' ');
    return { kind: kind === 'file' || kind === 'directory' ? kind : 'other', size: Number(size) || 0 };
  }

  /** Replaces a file with the bytes of `content`, creating its parents. */
  async write(path: string, content: AsyncIterable<Uint8Array>, account: Account): Promise<void> {
    const result = await this.run(WRITE, [path, String(account.uid), String(account.gid)], account, content);
    if (result.exitCode === 12) {
      throw new FileOperationError(`path is a directory: ${path}`, Code.InvalidArgument, 400);
    }
    if (result.exitCode !== 0) throw failure(result.exitCode, path, result.stderr.toString(), 'writing');
  }

  /** A file's bytes as `cat` in the container prints them, with cat's exit status once done. */
  read(path: string, account: Account): ReturnType<typeof streamStdout> {
    return streamStdout(this.container, ['cat', '--', path], { user: userOf(account) });
  }
}

function emptyEntry(path: string): EntryInfo {
  return {
    name: posix.basename(path) || path,
    type: FILE_TYPE.unspecified,
    path,
    size: 0n,
    mode: 0,
    permissions: '',
    owner: '',
    group: '',
  };
}
