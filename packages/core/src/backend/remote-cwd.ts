import { WsError } from '../contracts/errors.js';

// Exit codes no command of ours gives for these cases (core's POSIX fallbacks use them too), and the
// exact stderr that goes with them, so a command's own exit 86 is never mistaken for a missing folder.
const NO_CWD = 86;
const CWD_NOT_DIR = 87;
const CWD_MARK = 'ws: bad working directory';

/**
 * A shell fragment that enters the folder `quotedDir` (already shell-quoted, or `"$1"`) or ends the
 * command with the mark {@link cwdError} recognises; `onFailure` (a shell fragment ending in `;`) runs
 * first when it fails. For backends whose vendor API runs a command line rather than an argv in a cwd.
 */
export function enterCwd(quotedDir: string, onFailure = ''): string {
  return `cd -- ${quotedDir} 2>/dev/null || { ${onFailure}printf '%s' '${CWD_MARK}' >&2; [ -e ${quotedDir} ] && exit ${CWD_NOT_DIR}; exit ${NO_CWD}; }`;
}

/**
 * The typed error of a command ended by {@link enterCwd} (`NOT_FOUND` or `NOT_A_DIRECTORY`, naming
 * `cwd`), or undefined when the command ran.
 */
export function cwdError(
  exitCode: number | null,
  stderr: Uint8Array,
  cwd: string,
  where = 'the sandbox',
): WsError | undefined {
  if (exitCode !== NO_CWD && exitCode !== CWD_NOT_DIR) return undefined;
  if (new TextDecoder().decode(stderr) !== CWD_MARK) return undefined;
  return new WsError(
    exitCode === NO_CWD ? 'NOT_FOUND' : 'NOT_A_DIRECTORY',
    `The working directory ${cwd} ${exitCode === NO_CWD ? 'does not exist' : 'is not a directory'} in ${where}`,
    { details: { cwd } },
  );
}
