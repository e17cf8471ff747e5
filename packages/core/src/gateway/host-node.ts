// The gateway's runtime for a sandbox without a usable node: the host's own node binary, placed once
// per sandbox (uploaded compressed, or bound by the backend) and checked by running it there.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { shellQuote } from '../backend/quote.js';
import type { CompleteSandbox, FileOptions } from '../contracts/sandbox.js';

/** The host's node as a sandbox would run it. */
export interface HostNode {
  /** The binary on the host (`process.execPath`). */
  readonly path: string;
  /** `v20.20.0`. */
  readonly version: string;
  /** The machine name `uname -m` prints for its architecture (`x86_64`, `aarch64`), or undefined when no Linux sandbox can run it. */
  readonly machine: string | undefined;
  /** Its file name inside a sandbox: `node-v20.20.0-linux-x64`. */
  readonly fileName: string;
}

const MACHINES: Readonly<Record<string, string>> = { x64: 'x86_64', arm64: 'aarch64' };

/** This process's node, described for placing in a sandbox. */
export function hostNode(): HostNode {
  const machine = process.platform === 'linux' ? MACHINES[process.arch] : undefined;
  return {
    path: process.execPath,
    version: process.version,
    machine,
    fileName: `node-${process.version}-${process.platform}-${process.arch}`,
  };
}

/** Where a sandbox's node came from: its own, or the host's placed in it. */
export type ProvidedNode =
  | {
      /** The node executable's path inside the sandbox. */
      readonly path: string;
      /** Its version (`v20.18.0`). */
      readonly version: string;
      /** Whether it is the sandbox's own node or the host's placed in it. */
      readonly source: 'sandbox' | 'host';
    }
  | {
      /** Absent: no node can run the gateway in this sandbox. */
      readonly path?: undefined;
      /** Why no node can run there, and what to do about it. */
      readonly problem: string;
    };

/** What the sandbox says about itself in one command: its machine, its C library, a placed node's version. */
interface SandboxPlatform {
  readonly machine: string;
  readonly musl: boolean;
  readonly glibc: boolean;
  readonly gzip: boolean;
  /** What the placed node printed for `--version`, when one is there and runs. */
  readonly placed: string | undefined;
}

const PROBE_TIMEOUT_MS = 15_000;
/** How long unpacking the uploaded node may take inside the sandbox. */
const UNPACK_TIMEOUT_MS = 120_000;

async function probePlatform(
  sandbox: CompleteSandbox,
  target: string,
  options: FileOptions,
): Promise<SandboxPlatform | undefined> {
  const script = [
    'echo "machine=$(uname -m)"',
    'for f in /lib/ld-musl-*.so.1; do [ -e "$f" ] && echo musl=1; done',
    'for f in /lib64/ld-linux-*.so.2 /lib/ld-linux-*.so.* /lib/*-linux-gnu/libc.so.6; do [ -e "$f" ] && echo glibc=1; done',
    'command -v gzip >/dev/null 2>&1 && echo gzip=1',
    `[ -x ${shellQuote(target)} ] && echo "placed=$(${shellQuote(target)} --version 2>/dev/null)"`,
    'true',
  ].join('\n');
  const result = await sandbox.exec(['sh', '-c', script], {
    cwd: '/',
    timeoutMs: PROBE_TIMEOUT_MS,
    maxOutputBytes: 4096,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.exitCode !== 0) return undefined;
  const fields = new Map<string, string>();
  for (const line of result.stdoutText.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return {
    machine: fields.get('machine') ?? '',
    musl: fields.has('musl'),
    glibc: fields.has('glibc'),
    gzip: fields.has('gzip'),
    placed: fields.get('placed') || undefined,
  };
}

/** The host's node compressed, shared by the uploads of the next minute and then let go. */
let packed: { promise: Promise<Uint8Array>; timer: NodeJS.Timeout } | undefined;

function packedHostNode(path: string): Promise<Uint8Array> {
  if (packed) {
    packed.timer.refresh();
    return packed.promise;
  }
  const promise = readFile(path).then((bytes) => promisify(gzip)(bytes, { level: 1 }));
  const timer = setTimeout(() => {
    packed = undefined;
  }, 60_000);
  timer.unref();
  packed = { promise, timer };
  promise.catch(() => {
    if (packed?.promise === promise) packed = undefined;
  });
  return promise;
}

/** Options of {@link provideNode}. */
export interface ProvideNodeOptions extends FileOptions {
  /** The folder inside the sandbox where the host's node is placed (the gateway's home). */
  readonly home: string;
  /**
   * Puts the host's node at `<home>/<fileName>` by the backend's own means (a file in a folder bound
   * into the sandbox). Default: uploaded through the sandbox's files, gzip-compressed when the
   * sandbox has `gzip`, unpacked beside and renamed into place.
   */
  place?(node: HostNode): Promise<void>;
  /** What the sandbox is called in messages (`the image python:3.11-slim`, `the template base`). */
  readonly describe: string;
}

/**
 * The node the gateway runs on: the sandbox's own when it has node 18 or newer (`probed`), else the
 * host's, placed once per sandbox and found again on re-attach (its version checked by running it
 * there). When the host's node cannot run in the sandbox (another OS or architecture, a musl image, a
 * missing shared library), `problem` says why and what to do.
 */
export async function provideNode(
  sandbox: CompleteSandbox,
  probed: { path: string; version: string } | undefined,
  options: ProvideNodeOptions,
): Promise<ProvidedNode> {
  if (probed) return { ...probed, source: 'sandbox' };
  const host = hostNode();
  const remedy = `install node 18 or newer in ${options.describe}, or open it with gateway: false`;
  if (host.machine === undefined)
    return {
      problem: `${options.describe} has no node 18 or newer, and this host's node (${host.version}, ${process.platform} ${process.arch}) cannot run in a Linux sandbox: ${remedy}`,
    };
  const target = posix.join(options.home, host.fileName);
  const call = options.signal ? { signal: options.signal } : {};
  const platform = await probePlatform(sandbox, target, call);
  if (!platform)
    return {
      problem: `${options.describe} has no node 18 or newer, and its platform could not be read: ${remedy}`,
    };
  if (platform.placed === host.version) return { path: target, version: host.version, source: 'host' };
  if (platform.machine !== host.machine)
    return {
      problem: `${options.describe} has no node 18 or newer, and runs on ${platform.machine || 'an unknown machine'} where this host's node is built for ${host.machine}: ${remedy}`,
    };
  if (platform.musl && !platform.glibc)
    return {
      problem: `${options.describe} has no node 18 or newer and uses the musl C library (Alpine), where this host's node is built for glibc: ${remedy} (on Alpine: apk add nodejs)`,
    };
  if (options.place) await options.place(host);
  else await upload(sandbox, host, target, platform.gzip, call);
  const check = await sandbox.exec([target, '--version'], {
    cwd: '/',
    timeoutMs: PROBE_TIMEOUT_MS,
    maxOutputBytes: 4096,
    ...call,
  });
  const printed = check.stdoutText.trim();
  if (check.exitCode === 0 && printed === host.version)
    return { path: target, version: host.version, source: 'host' };
  const said = `${check.stderrText}${check.stdoutText}`.trim().slice(-600);
  return {
    problem: `${options.describe} has no node 18 or newer, and this host's node ${host.version} placed at ${target} does not run there (exit ${check.exitCode}${said ? `: ${said}` : ''}); it needs glibc 2.28 or newer and libstdc++: ${remedy}`,
  };
}

/**
 * The most bytes one upload request carries: the node goes in parts, so no single request nears a
 * vendor's request limit, and a part whose request failed is sent again on its own.
 */
const UPLOAD_PART_BYTES = 8 * 1024 * 1024;

/**
 * Writes one part of the upload, once more when the first request failed: the part is a temporary
 * file nothing else reads, replaced whole, so sending it again cannot do harm.
 */
async function writePart(sandbox: CompleteSandbox, path: string, bytes: Uint8Array, call: FileOptions) {
  try {
    await sandbox.writeFile(path, bytes, call);
  } catch (error) {
    if (call.signal?.aborted) throw error;
    await sandbox.writeFile(path, bytes, call);
  }
}

async function upload(
  sandbox: CompleteSandbox,
  host: HostNode,
  target: string,
  compressed: boolean,
  call: FileOptions,
): Promise<void> {
  const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
  const bytes = compressed ? await packedHostNode(host.path) : await readFile(host.path);
  const parts: string[] = [];
  try {
    for (let offset = 0; offset < bytes.byteLength; offset += UPLOAD_PART_BYTES) {
      const part = `${temporary}.part${parts.length}`;
      parts.push(part);
      await writePart(sandbox, part, bytes.subarray(offset, offset + UPLOAD_PART_BYTES), call);
    }
    const joined = parts.map((part) => shellQuote(part)).join(' ');
    const quoted = { temporary: shellQuote(temporary), target: shellQuote(target) };
    const assembled = await sandbox.exec(
      [
        'sh',
        '-c',
        `cat ${joined} ${compressed ? '| gzip -dc ' : ''}> ${quoted.temporary} && rm -f ${joined} && chmod 755 ${quoted.temporary} && mv -f ${quoted.temporary} ${quoted.target}`,
      ],
      { cwd: '/', timeoutMs: UNPACK_TIMEOUT_MS, maxOutputBytes: 4096, ...call },
    );
    if (assembled.exitCode !== 0)
      throw new Error(`placing node failed: ${assembled.stderrText.trim().slice(-400)}`);
  } finally {
    await sandbox
      .exec(['rm', '-f', temporary, ...parts], {
        cwd: '/',
        timeoutMs: PROBE_TIMEOUT_MS,
        maxOutputBytes: 1024,
      })
      .catch(() => {});
  }
}
