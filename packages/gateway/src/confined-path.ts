import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { isWsError, WsError } from '@ws/core';

/**
 * Resolves `path` against `workdir` the way the sandbox sees it and, with `allowedRoots`, refuses one
 * that leads (symbolic links followed) outside them.
 * @throws WsError `INVALID_ARGUMENT` for an empty path or one with NUL; `PERMISSION_DENIED` for one
 *   outside the roots or that cannot be resolved.
 */
export async function confinedPath(
  path: string,
  workdir: string,
  allowedRoots: readonly string[] | undefined,
): Promise<string> {
  if (typeof path !== 'string' || path === '' || path.includes('\0'))
    throw new WsError('INVALID_ARGUMENT', 'A path must be a non-empty string without NUL');
  const absolute = posix.resolve(workdir, path);
  const roots = allowedRoots;
  if (!roots) return absolute;
  // The deepest existing ancestor decides where the path really leads.
  let existing = absolute;
  let rest = '';
  for (;;) {
    try {
      const real = await realpath(existing);
      const resolved = rest ? posix.join(real, rest) : real;
      if (!roots.some((root) => resolved === root || resolved.startsWith(`${root}/`))) {
        throw new WsError('PERMISSION_DENIED', `${path} leads outside ${roots.join(' and ')}`, {
          details: { path, resolved },
        });
      }
      return absolute;
    } catch (error) {
      if (isWsError(error)) throw error;
      if (existing === '/') throw new WsError('PERMISSION_DENIED', `${path} cannot be resolved`);
      rest = rest ? posix.join(posix.basename(existing), rest) : posix.basename(existing);
      existing = posix.dirname(existing);
    }
  }
}
