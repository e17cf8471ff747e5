import { WsError } from '../contracts/errors.js';
import type { CompleteSandbox, ReadFileOptions } from '../contracts/sandbox.js';

/** The most `readFile` returns when no `maxBytes` is given: 256 MiB (a larger file: `readStream`). */
export const READ_FILE_MAX_BYTES = 256 * 1024 * 1024;

function tooLarge(path: string, maxBytes: number, size?: number): WsError {
  return new WsError(
    'LIMIT_EXCEEDED',
    `${path} is larger than ${maxBytes} bytes${size !== undefined ? ` (${size})` : ''}: read it with readStream, or pass a larger maxBytes`,
    { details: { path, maxBytes, ...(size !== undefined ? { size } : {}) } },
  );
}

function checkedMax(maxBytes: number | undefined): number {
  if (maxBytes === undefined) return READ_FILE_MAX_BYTES;
  if (maxBytes === Number.POSITIVE_INFINITY || (Number.isSafeInteger(maxBytes) && maxBytes >= 0))
    return maxBytes;
  throw new WsError(
    'INVALID_ARGUMENT',
    `maxBytes must be a whole number of bytes or Infinity, not ${maxBytes}`,
    {
      details: { maxBytes },
    },
  );
}

/**
 * `readFile` that never returns more than `maxBytes` (default {@link READ_FILE_MAX_BYTES}) and never
 * reads what is not a regular file: where the backend can look at a path natively, it is looked at
 * first, a FIFO, a device or a socket (which the sandbox may have planted to freeze or fill the
 * reader) is refused with `INVALID_ARGUMENT`, and a regular file larger than the limit with
 * `LIMIT_EXCEEDED` before it is read. A file swapped in between the look and the read, and every
 * path on a backend without a native look, is the backend's read to refuse (the local sandbox and
 * the gateway open without blocking and check the type of what they opened; the exec-based reads
 * test it first); a file that grew meanwhile is refused after.
 */
export function boundedReadFile(
  sandbox: CompleteSandbox,
): (path: string, options?: ReadFileOptions) => Promise<Uint8Array> {
  const read = sandbox.readFile.bind(sandbox);
  return async (path, options = {}) => {
    const maxBytes = checkedMax(options.maxBytes);
    const { maxBytes: _, ...rest } = options;
    // Where a look costs a command of its own, the backend's read refuses what is not a file itself.
    if (sandbox.native.stat) {
      const info = await sandbox.stat(path, rest);
      if (info.type === 'other')
        throw new WsError(
          'INVALID_ARGUMENT',
          `${path} is not a regular file (a FIFO, device or socket): readFile reads regular files`,
          { details: { path } },
        );
      if (info.type === 'file' && info.size > maxBytes) throw tooLarge(path, maxBytes, info.size);
    }
    // A directory fails in the backend's own words.
    const bytes = await read(path, rest);
    if (bytes.byteLength > maxBytes) throw tooLarge(path, maxBytes, bytes.byteLength);
    return bytes;
  };
}

/** The sandbox with its `readFile` bounded (see {@link boundedReadFile}); every other member as it is. */
export function withBoundedReads(sandbox: CompleteSandbox): CompleteSandbox {
  const readFile = boundedReadFile(sandbox);
  return new Proxy(sandbox, {
    get(target, key) {
      if (key === 'readFile') return readFile;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
