// Writing a file whole or not at all through a vendor's upload: a temporary file beside it, renamed over it.
import { randomBytes } from 'node:crypto';
import { abortError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { Sandbox, WriteOptions } from '../contracts/sandbox.js';

/**
 * Writing a file whole or not at all, in two steps, so that a writer killed halfway never replaces
 * it. `prepare` ($1 the target) resolves the target's links, refuses a folder, makes the parents and
 * a fresh temporary file beside the target, and prints both paths, each NUL-terminated (the
 * temporary's name is in `$t` for a script that goes on to fill it). Once the caller has seen every
 * byte arrive, `commit` ($1 target, $2 the written temporary file, $3 a mode, or '' to keep a
 * replaced file's, else 0666 less the umask) renames it over the target. For backends whose file API
 * uploads the bytes in between.
 */
export const POSIX_WRITE_SCRIPTS = {
  /**
   * `$1` the target. Prints the resolved target and a new temporary file beside it, each NUL-terminated;
   * exits 65 after more than 40 links, 67 when the target is a folder, 68 when its parent cannot be made.
   */
  prepare: `p=$1 n=0
while [ -L "$p" ]; do
  n=$((n + 1)); [ "$n" -gt 40 ] && exit 65
  l=$(readlink -- "$p") || exit 1
  case "$l" in /*) p=$l;; *) p=$(dirname -- "$p")/$l;; esac
done
[ -d "$p" ] && exit 67
d=$(dirname -- "$p")
mkdir -p -- "$d" 2>/dev/null || exit 68
t=$(mktemp "$d/.ws-XXXXXXXXXXXX.tmp") || exit 1
printf '%s\\0%s\\0' "$p" "$t"`,
  /**
   * `$1` the target, `$2` the written temporary file, `$3` an octal mode or `''`. Gives the temporary
   * file the mode (else the replaced file's, else 0666 less the umask) and renames it over the target.
   */
  commit: `if [ -n "$3" ]; then m=$3
elif [ -e "$1" ]; then m=$(stat -L -c %a -- "$1" 2>/dev/null || echo 644)
else m=$(printf %o $((0666 & ~$(umask)))); fi
chmod "$m" -- "$2" && exec mv -f -- "$2" "$1"`,
} as const;

/**
 * Writes the file `target` (absolute) whole or not at all through a vendor's upload: a command
 * resolves the target's links and makes a temporary file beside it ({@link POSIX_WRITE_SCRIPTS}),
 * `upload` puts the bytes into that file, and a second command gives it the mode and renames it over
 * the target. On any failure the temporary file goes and the old file stays; `translate` turns the
 * vendor's error into a WsError naming the target.
 */
export async function writeThroughTemporary(
  sandbox: Pick<Sandbox, 'exec'>,
  requested: string,
  options: WriteOptions,
  upload: (temporary: string) => Promise<void>,
  translate: (error: unknown, target: string) => WsError,
): Promise<void> {
  throwIfAborted(options.signal);
  await removeLeftovers(sandbox);
  const prepared = await sandbox.exec(['sh', '-c', POSIX_WRITE_SCRIPTS.prepare, 'sh', requested], {
    cwd: '/',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (prepared.exitCode !== 0) {
    const code = ({ 65: 'INVALID_ARGUMENT', 67: 'IS_A_DIRECTORY', 68: 'NOT_A_DIRECTORY' } as const)[
      prepared.exitCode as 65 | 67 | 68
    ];
    throw new WsError(
      code ?? 'BACKEND_ERROR',
      `Writing ${requested} failed${code ? '' : `: ${prepared.stderrText.trim()}`}`,
      { details: { path: requested } },
    );
  }
  const [target = requested, temporary = ''] = prepared.stdoutText.split('\0');
  try {
    await upload(temporary);
    throwIfAborted(options.signal);
    const mode = options.mode === undefined ? '' : options.mode.toString(8);
    const committed = await sandbox.exec(
      ['sh', '-c', POSIX_WRITE_SCRIPTS.commit, 'sh', target, temporary, mode],
      {
        cwd: '/',
      },
    );
    if (committed.exitCode !== 0)
      throw new WsError('BACKEND_ERROR', `Writing ${target} failed: ${committed.stderrText.trim()}`, {
        details: { path: target },
      });
  } catch (error) {
    // A service that broke the upload may refuse the removal too: the next write on this sandbox
    // removes the temporary file once the service answers again.
    if (!(await removeFiles(sandbox, [temporary]))) leftoversOf(sandbox).add(temporary);
    if (options.signal?.aborted) throw abortError(options.signal);
    throw translate(error, target);
  }
}

/** Temporary files of failed writes whose removal failed too, per sandbox object. */
const LEFTOVERS = new WeakMap<object, Set<string>>();

function leftoversOf(sandbox: object): Set<string> {
  const known = LEFTOVERS.get(sandbox);
  if (known) return known;
  const set = new Set<string>();
  LEFTOVERS.set(sandbox, set);
  return set;
}

async function removeLeftovers(sandbox: Pick<Sandbox, 'exec'>): Promise<void> {
  const set = LEFTOVERS.get(sandbox);
  if (!set?.size) return;
  const paths = [...set];
  if (await removeFiles(sandbox, paths)) for (const path of paths) set.delete(path);
}

/** Removes files with one bounded command; false when the command could not run or failed. */
async function removeFiles(sandbox: Pick<Sandbox, 'exec'>, paths: readonly string[]): Promise<boolean> {
  const removed = await sandbox
    .exec(['rm', '-f', '--', ...paths], { cwd: '/', timeoutMs: REMOVE_TIMEOUT_MS })
    .catch(() => undefined);
  return removed?.exitCode === 0;
}

const REMOVE_TIMEOUT_MS = 30_000;

/**
 * A fresh hidden name (`.ws-<random>.tmp`) in the same folder as `target`, for a file that is renamed
 * over it once complete. Short whatever the target's name, so it never passes the 255-byte limit.
 */
export function temporaryBeside(target: string): string {
  const slash = target.lastIndexOf('/');
  return `${target.slice(0, slash + 1)}.ws-${randomBytes(6).toString('hex')}.tmp`;
}
