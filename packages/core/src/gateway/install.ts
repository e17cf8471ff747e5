import { posix } from 'node:path';
import { WsError } from '../contracts/errors.js';
import type { CompleteSandbox, FileOptions } from '../contracts/sandbox.js';
import { sha256Hex } from '../internal/tools/text.js';

/** The lowest node major version the gateway runs on. */
export const GATEWAY_MIN_NODE_MAJOR = 18;

/**
 * The sandbox's node, if it has one new enough for the gateway: `{ path, version }`, else undefined.
 * One command.
 */
export async function probeNode(
  sandbox: CompleteSandbox,
  options: FileOptions = {},
): Promise<
  | {
      /** The node executable's path inside the sandbox. */
      path: string;
      /** What it printed for `--version` (`v20.18.0`). */
      version: string;
    }
  | undefined
> {
  const result = await sandbox.exec(['sh', '-c', 'command -v node && node --version'], {
    cwd: '/',
    timeoutMs: 15_000,
    maxOutputBytes: 4096,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.exitCode !== 0) return undefined;
  const [path = '', version = ''] = result.stdoutText.trim().split('\n');
  const major = Number(/^v(\d+)/.exec(version)?.[1] ?? 0);
  return major >= GATEWAY_MIN_NODE_MAJOR && path ? { path, version } : undefined;
}

/** The content-addressed file name of a gateway bundle (`gateway-<16 hex digits of its SHA-256>.mjs`). */
export function gatewayBundleName(bundle: Uint8Array): string {
  return `gateway-${sha256Hex(bundle).slice(0, 16)}.mjs`;
}

/**
 * Puts the gateway bundle in `home` inside the sandbox under a content-addressed name, writing it only
 * when that file is not there yet. Returns its path.
 */
export async function installGateway(
  sandbox: CompleteSandbox,
  home: string,
  bundle: Uint8Array,
  options: FileOptions = {},
): Promise<string> {
  const path = posix.join(home, gatewayBundleName(bundle));
  if (await sandbox.exists(path, options)) return path;
  await sandbox.writeFile(path, bundle, options);
  return path;
}

/**
 * Reads the gateway bundle a backend package ships as `dist/gateway.mjs`, given the calling module's
 * URL (from `dist/` when installed, from `src/` in this repository's tests).
 * @throws WsError `NOT_FOUND` when the package was not built.
 */
export async function readGatewayAsset(moduleUrl: string): Promise<Uint8Array> {
  const { readFile } = await import('node:fs/promises');
  const candidates = [new URL('./gateway.mjs', moduleUrl), new URL('../dist/gateway.mjs', moduleUrl)];
  for (const candidate of candidates) {
    try {
      return await readFile(candidate);
    } catch {
      // try the next place
    }
  }
  throw new WsError(
    'NOT_FOUND',
    `The gateway bundle is missing (looked at ${candidates.map((url) => url.pathname).join(', ')}); build the package first`,
  );
}
