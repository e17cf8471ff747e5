import { decodeUtf8 } from '../../backend/exec-result.js';
import { WsError } from '../../contracts/errors.js';
import type { CompleteSandbox, ExecResult } from '../../contracts/sandbox.js';

/** Version-control directories that Glob and Grep never descend into. */
export const VCS_DIRECTORIES = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl'] as const;

/** One listed file: its path relative to the listing's base and its mtime. */
export interface ListedFile {
  readonly relative: string;
  readonly mtimeMs: number;
}

// Listings can be large (a path per file); this much of them is kept.
const LISTING_CAP_BYTES = 256 * 1024 * 1024;

/** Parses `<mtime>\t<path>\0…` records, dropping `prefix` from each path. */
function parseTimedRecords(bytes: Uint8Array, prefix = ''): ListedFile[] {
  const text = decodeUtf8(bytes);
  const files: ListedFile[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\0', start);
    if (end === -1) end = text.length;
    const tab = text.indexOf('\t', start);
    if (tab !== -1 && tab < end) {
      const pathStart = prefix !== '' && text.startsWith(prefix, tab + 1) ? tab + 1 + prefix.length : tab + 1;
      files.push({
        relative: text.slice(pathStart, end),
        mtimeMs: Math.round(Number(text.slice(start, tab)) * 1000),
      });
    }
    start = end + 1;
  }
  return files;
}

function checkListing(result: ExecResult, what: string): void {
  if (result.truncated) {
    throw new WsError(
      'LIMIT_EXCEEDED',
      `${what}: the listing exceeds ${LISTING_CAP_BYTES} bytes; search a narrower path`,
    );
  }
}

/**
 * Every regular file under `base` (symbolic links are not followed, version-control directories are
 * skipped), with mtimes, through GNU `find`. The POSIX path of Glob and Grep.
 */
export async function listFilesWithFind(
  sandbox: CompleteSandbox,
  base: string,
  signal?: AbortSignal,
): Promise<ListedFile[]> {
  const prune = VCS_DIRECTORIES.flatMap((name, index) =>
    index === 0 ? ['-name', name] : ['-o', '-name', name],
  );
  const result = await sandbox.exec(
    ['find', base, '(', ...prune, ')', '-prune', '-o', '-type', 'f', '-printf', '%T@\\t%P\\0'],
    {
      cwd: '/',
      maxOutputBytes: LISTING_CAP_BYTES,
      ...(signal ? { signal } : {}),
    },
  );
  checkListing(result, `Listing ${base}`);
  if (result.exitCode !== 0 && result.stdout.byteLength === 0) {
    throw new WsError('BACKEND_ERROR', `Listing ${base} failed: ${result.stderrText.trim()}`);
  }
  return parseTimedRecords(result.stdout);
}

/**
 * The regular files under `base` that ripgrep's `--files` lists for an anchored glob (hidden files
 * included, ignore files not consulted, version-control directories skipped), with mtimes.
 */
export async function listFilesWithRipgrep(
  sandbox: CompleteSandbox,
  base: string,
  glob: string,
  gnuStat: boolean,
  signal?: AbortSignal,
): Promise<ListedFile[]> {
  const excludes = VCS_DIRECTORIES.flatMap((name) => ['--glob', `!${name}`]);
  // rg lists the matches and GNU stat (or find, where stat lacks --printf) reports their mtimes,
  // NUL-separated so any name survives.
  const script = gnuStat
    ? `rg "$@" | xargs -0 -r stat --printf '%.9Y\\t%n\\0'`
    : `rg "$@" | xargs -0 -r sh -c 'exec find "$@" -maxdepth 0 -printf "%T@\\t%p\\0"' sh`;
  const result = await sandbox.exec(
    [
      'sh',
      '-c',
      script,
      'sh',
      '--files',
      '--null',
      '--hidden',
      '--no-ignore',
      '--no-config',
      '--glob',
      glob,
      ...excludes,
      '--',
      '.',
    ],
    // ripgrep matches --glob patterns relative to its working directory, so that must be the base;
    // listing "." there also keeps the paths (and the listing) short.
    { cwd: base, maxOutputBytes: LISTING_CAP_BYTES, ...(signal ? { signal } : {}) },
  );
  checkListing(result, `Listing ${base}`);
  if (result.stdout.byteLength === 0 && result.stderrText.trim() !== '') {
    throw new WsError('BACKEND_ERROR', `Listing ${base} failed: ${result.stderrText.trim()}`);
  }
  return parseTimedRecords(result.stdout, './');
}
