import { abortError, isWsError, WsError } from '../contracts/errors.js';
import type { CompleteSandbox } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';
import type { McpStore } from './mcp/registry.js';

/** Creates the directories (and parents) that are missing: natively, or in one `mkdir -p` through exec. */
export async function makeDirectories(
  sandbox: CompleteSandbox,
  paths: readonly string[],
  options: CallOptions = {},
): Promise<void> {
  // A native recursive mkdir costs what a look does: each is made (side by side; one making a parent
  // another also makes is no conflict). Otherwise, where looking costs less than a command, only what
  // is missing is made (usually nothing), in one command.
  if (sandbox.native.mkdir) {
    await Promise.all(paths.map((path) => sandbox.mkdir(path, { recursive: true, ...signalOf(options) })));
    return;
  }
  const missing = sandbox.native.stat
    ? (
        await Promise.all(
          paths.map(async (path) => ((await sandbox.exists(path, options)) ? undefined : path)),
        )
      ).filter((path): path is string => path !== undefined)
    : paths;
  if (missing.length === 0) return;
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

/** Only the signal of `options`, when there is one (a call's other options do not pass on). */
export function signalOf(options: CallOptions): CallOptions {
  return options.signal ? { signal: options.signal } : {};
}

/**
 * A text file of the sandbox as a store (`.mcp`): a missing file loads as undefined. `sandbox` and
 * `path` are asked at each call, so the store follows a reopened sandbox.
 */
export function fileStore(sandbox: () => CompleteSandbox, path: () => string): McpStore {
  return {
    load: async () => {
      try {
        return new TextDecoder().decode(await sandbox().readFile(path()));
      } catch (error) {
        if (isWsError(error, 'NOT_FOUND')) return undefined;
        throw error;
      }
    },
    // A write replaces a file whole: a reader sees the old file or the new, never half.
    save: (text) => sandbox().writeFile(path(), text),
  };
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
