import { posix } from 'node:path';
import { WsError } from '../contracts/errors.js';

/**
 * Resolves `path` against `base` with POSIX rules (no filesystem access) and returns an absolute,
 * normalised path. Sandboxes use it so that a relative path always means "relative to the
 * workdir", never to some process's current directory.
 *
 * @throws WsError `INVALID_ARGUMENT` for an empty path, a non-string, or a path holding NUL.
 */
export function resolveSandboxPath(base: string, path: string): string {
  assertPath(path);
  return posix.resolve(base, path);
}

/** Checks that `path` is a non-empty string without NUL; returns it. */
export function assertPath(path: unknown, what = 'path'): string {
  if (typeof path !== 'string' || path.length === 0) {
    throw new WsError('INVALID_ARGUMENT', `The ${what} must be a non-empty string`, { details: { path } });
  }
  if (path.includes('\0')) {
    throw new WsError('INVALID_ARGUMENT', `The ${what} must not contain a NUL byte`, { details: { path } });
  }
  return path;
}

/** Joins POSIX path segments (a thin, named wrapper over `path.posix.join`). */
export function joinSandboxPath(...segments: string[]): string {
  return posix.join(...segments);
}

/** True when `child` is `parent` or lies below it (both absolute and normalised). */
export function isWithin(parent: string, child: string): boolean {
  if (parent === '/') return child.startsWith('/');
  return child === parent || child.startsWith(`${parent}/`);
}
