// Helpers shared by the cloud adapters: package versions, environment overlays, error summaries.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The installed version of `name` as bench resolves it (walks up from its entry to its package.json). */
export function packageVersion(name, from = import.meta.url) {
  try {
    let directory = dirname(fileURLToPath(import.meta.resolve(name, from)));
    for (;;) {
      try {
        const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'));
        if (manifest.name === name) return manifest.version;
      } catch {}
      const parent = dirname(directory);
      if (parent === directory) return undefined;
      directory = parent;
    }
  } catch {
    return undefined;
  }
}

/** The first line of an error's message (what a table cell can hold). */
export function firstLine(error) {
  const text = error instanceof Error ? error.message || String(error) : String(error);
  return text.split('\n').find((line) => line.trim() !== '') ?? text;
}

/** Sets environment variables and returns a function that restores the previous values. */
export function overlayEnv(variables) {
  const previous = Object.fromEntries(Object.keys(variables).map((key) => [key, process.env[key]]));
  Object.assign(process.env, variables);
  return () => {
    for (const [key, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

/** Throws unless a command's exit code is 0. */
export function expectSuccess(exitCode, detail) {
  if (exitCode !== 0 && exitCode !== undefined && exitCode !== null) {
    throw new Error(`command exited ${exitCode}${detail ? `: ${String(detail).slice(0, 200)}` : ''}`);
  }
}

/**
 * Removes a global CommonJS `require` (the one `node -e` and the REPL define, which resolves from the
 * working directory) and returns a function that puts it back. SDKs that load optional modules
 * lazily (`@daytonaio/sdk` loads `form-data` for uploads) prefer such a global to their own
 * `createRequire(import.meta.url)` and then miss their own dependencies; without it they run as they
 * do in any ES module program.
 */
export function hideGlobalRequire() {
  const descriptor = Object.getOwnPropertyDescriptor(globalThis, 'require');
  if (!descriptor?.configurable) return () => {};
  delete globalThis.require;
  return () => Object.defineProperty(globalThis, 'require', descriptor);
}
