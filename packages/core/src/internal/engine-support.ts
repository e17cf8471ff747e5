import { abortError, WsError } from '../contracts/errors.js';
import type { CompleteSandbox } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';

/** Creates the directories (and parents) that are missing: natively, or in one `mkdir -p` through exec. */
export async function makeDirectories(
  sandbox: CompleteSandbox,
  paths: readonly string[],
  options: CallOptions = {},
): Promise<void> {
  // Where looking costs less than a command, only what is missing is made (usually nothing).
  const missing = sandbox.native.stat
    ? (
        await Promise.all(
          paths.map(async (path) => ((await sandbox.exists(path, options)) ? undefined : path)),
        )
      ).filter((path): path is string => path !== undefined)
    : paths;
  if (missing.length === 0) return;
  if (sandbox.native.mkdir) {
    for (const path of missing) await sandbox.mkdir(path, { recursive: true, ...signalOf(options) });
    return;
  }
  const result = await sandbox.exec(['mkdir', '-p', '--', ...missing], { cwd: '/', ...signalOf(options) });
  if (result.exitCode !== 0) {
    throw new WsError('BACKEND_ERROR', `Creating ${paths.join(', ')} failed: ${result.stderrText.trim()}`, {
      details: { paths },
    });
  }
}

/** Removes paths recursively, ignoring missing ones: natively, or in one `rm -rf` through exec. */
export async function removeAll(
  sandbox: CompleteSandbox,
  paths: readonly string[],
  options: CallOptions = {},
): Promise<void> {
  if (sandbox.native.remove) {
    await Promise.all(
      paths.map((path) => sandbox.remove(path, { recursive: true, force: true, ...signalOf(options) })),
    );
    return;
  }
  const result = await sandbox.exec(['rm', '-rf', '--', ...paths], { cwd: '/', ...signalOf(options) });
  if (result.exitCode !== 0) {
    throw new WsError('BACKEND_ERROR', `Removing ${paths.join(', ')} failed: ${result.stderrText.trim()}`, {
      details: { paths },
    });
  }
}

function signalOf(options: CallOptions): CallOptions {
  return options.signal ? { signal: options.signal } : {};
}

/** Waits for `promise`, but rejects with `ABORTED` as soon as `signal` fires (the work goes on). */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
