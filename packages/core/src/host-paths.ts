import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve, sep } from 'node:path';
import { WsError } from './errors.js';

/**
 * Refuses to let a backend delete a host folder that must never go: `/`, the home directory, or the
 * current directory or one of its ancestors. Returns the resolved path.
 * @throws WsError `PERMISSION_DENIED`.
 */
export function assertDeletableHostDir(path: string): string {
  const target = resolve(path);
  const cwd = resolve(process.cwd());
  if (target === '/' || target === homedir() || target === cwd || cwd.startsWith(target + sep)) {
    throw new WsError(
      'PERMISSION_DENIED',
      `Refusing to delete ${target}: it is the root, the home directory or holds the current directory`,
      {
        details: { path: target },
      },
    );
  }
  return target;
}

/** The last `bytes` of a host file as text ('' when it cannot be read): for log tails in error messages. */
export async function readHostFileTail(path: string, bytes = 4_096): Promise<string> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return '';
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}
