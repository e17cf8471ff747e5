import { createHash } from 'node:crypto';
import { isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { CompleteSandbox } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';
import type { WorkspacePackages } from '../contracts/workspace-options.js';
import { shellQuote } from './quote.js';
import { TailBuffer } from './streams.js';

/** The installers of `packages`, in the order they run. */
export const INSTALLERS = ['apt', 'pip', 'npm'] as const;

/** One installer of `packages`. */
export type Installer = (typeof INSTALLERS)[number];

/** The specs of each installer. */
export type PackageLists = Readonly<Record<Installer, readonly string[]>>;

/** `packages` checked: every installer's list (empty when not given) and the time limit. */
export interface CheckedPackages extends PackageLists {
  readonly timeoutMs: number;
}

/** The default time limit of the whole install: 10 minutes. */
export const DEFAULT_PACKAGES_TIMEOUT_MS = 600_000;
/** The most characters one spec may have, and the most specs one installer takes. */
const MAX_SPEC_CHARS = 4_096;
const MAX_SPECS = 1_000;
/** The bytes of installer output a failure reports (the last ones). */
const OUTPUT_TAIL_BYTES = 2_048;
/** The most bytes of a record read back: a planted huge file is a bad record, not a big read. */
const MAX_RECORD_BYTES = 1024 * 1024;
const RECORD_VERSION = 1;

function invalid(message: string, details: Record<string, unknown>): WsError {
  return new WsError('INVALID_ARGUMENT', message, { details });
}

/**
 * Why `spec` cannot be passed to an installer, or undefined when it can: empty, longer than 4 096
 * characters, starting with `-` (it would be read as a flag), or holding a newline, a carriage return
 * or NUL.
 */
export function specProblem(spec: unknown): string | undefined {
  if (typeof spec !== 'string') return 'is not a string';
  if (spec.trim().length === 0) return 'is empty';
  if (spec.length > MAX_SPEC_CHARS) return `is longer than ${MAX_SPEC_CHARS} characters`;
  if (spec.startsWith('-')) return 'starts with "-" (installer flags are not taken)';
  if (/[\n\r\0]/.test(spec)) return 'holds a newline or NUL';
  return undefined;
}

/**
 * Checks a workspace's `packages` option (no I/O). Undefined, or lists all empty, is undefined.
 * @throws WsError `INVALID_ARGUMENT` naming the key or the spec: not an object, an unknown key, a list
 * that is not an array of strings, a spec refused by {@link specProblem}, a bad `timeoutMs`.
 */
export function checkPackages(value: unknown): CheckedPackages | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid("packages takes an object such as { npm: ['typescript'] }", { option: 'packages' });
  const known = new Set<string>([...INSTALLERS, 'timeoutMs']);
  for (const key of Object.keys(value))
    if (!known.has(key))
      throw invalid(`packages has no ${JSON.stringify(key)}; it takes apt, pip, npm and timeoutMs`, {
        option: `packages.${key}`,
      });
  const options = value as WorkspacePackages;
  const lists = {} as Record<Installer, readonly string[]>;
  for (const installer of INSTALLERS) {
    const list: unknown = options[installer];
    if (list === undefined) {
      lists[installer] = [];
      continue;
    }
    if (!Array.isArray(list))
      throw invalid(`packages.${installer} takes an array of package specs`, {
        option: `packages.${installer}`,
      });
    if (list.length > MAX_SPECS)
      throw invalid(`packages.${installer} has more than ${MAX_SPECS} specs`, {
        option: `packages.${installer}`,
      });
    for (const spec of list) {
      const problem = specProblem(spec);
      if (problem)
        throw invalid(`packages.${installer}: the spec ${JSON.stringify(spec)} ${problem}`, {
          option: `packages.${installer}`,
          spec,
        });
    }
    lists[installer] = [...new Set(list as string[])];
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PACKAGES_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 1)
    throw invalid(`packages.timeoutMs must be a whole number of milliseconds, at least 1`, {
      option: 'packages.timeoutMs',
      value: timeoutMs,
    });
  if (INSTALLERS.every((installer) => lists[installer].length === 0)) return undefined;
  return { ...lists, timeoutMs };
}

/**
 * Where a sandbox records the packages installed for a workspace: `/var/tmp`, which lives as long as
 * the sandbox's own file system (unlike a workdir bound from the host) and which every user may write.
 */
export function packageRecordPath(workspaceId: string): string {
  return `/var/tmp/ws-packages-${workspaceId}.json`;
}

function listsHash(lists: PackageLists): string {
  const canonical = JSON.stringify(INSTALLERS.map((installer) => [installer, [...lists[installer]].sort()]));
  return createHash('sha256').update(canonical).digest('hex');
}

/** The text of a record saying `lists` are installed. */
export function formatPackageRecord(lists: PackageLists): string {
  const installed = Object.fromEntries(INSTALLERS.map((installer) => [installer, [...lists[installer]]]));
  return `${JSON.stringify({ version: RECORD_VERSION, hash: listsHash(lists), installed })}\n`;
}

/**
 * What a record says is installed, or undefined when it says nothing trustworthy. The record is in
 * the sandbox, where the agent may have written anything: anything but a well-formed record of this
 * version whose hash matches its lists is undefined (install again); it never throws.
 */
export function parsePackageRecord(text: string): PackageLists | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { version, hash, installed } = parsed as Record<string, unknown>;
  if (version !== RECORD_VERSION || typeof hash !== 'string') return undefined;
  if (typeof installed !== 'object' || installed === null) return undefined;
  const lists = {} as Record<Installer, readonly string[]>;
  for (const installer of INSTALLERS) {
    const list: unknown = (installed as Record<string, unknown>)[installer];
    if (!Array.isArray(list) || list.length > MAX_SPECS) return undefined;
    if (!list.every((spec) => specProblem(spec) === undefined)) return undefined;
    lists[installer] = list as string[];
  }
  return listsHash(lists) === hash ? lists : undefined;
}

/** The specs of `wanted` that `installed` lacks, per installer. */
export function missingPackages(wanted: PackageLists, installed: PackageLists | undefined): PackageLists {
  const missing = {} as Record<Installer, readonly string[]>;
  for (const installer of INSTALLERS) {
    const have = new Set(installed?.[installer] ?? []);
    missing[installer] = wanted[installer].filter((spec) => !have.has(spec));
  }
  return missing;
}

/** What {@link installPackages} did. */
export interface PackageInstallReport {
  /** The specs it installed now, per installer (empty when the record had them all). */
  readonly installed: PackageLists;
  /** Milliseconds the install took, looking at the record included. */
  readonly durationMs: number;
  /** What went wrong without stopping the open (a record it could not read or write). */
  readonly warnings: readonly string[];
}

interface RunOptions extends CallOptions {
  readonly deadline: number;
  readonly timeoutMs: number;
}

interface RunResult {
  readonly exitCode: number;
  readonly output: string;
  readonly timedOut: boolean;
}

async function run(
  sandbox: CompleteSandbox,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  options: RunOptions,
): Promise<RunResult> {
  throwIfAborted(options.signal);
  const remaining = Math.ceil(options.deadline - performance.now());
  if (remaining <= 0) return { exitCode: -1, output: '', timedOut: true };
  const tail = new TailBuffer(OUTPUT_TAIL_BYTES);
  const result = await sandbox.exec(argv, {
    env,
    timeoutMs: remaining,
    maxOutputBytes: OUTPUT_TAIL_BYTES,
    onStdout: (chunk) => tail.push(chunk),
    onStderr: (chunk) => tail.push(chunk),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { exitCode: result.exitCode, output: tail.text(), timedOut: result.timedOut };
}

/** What apt says when the sandbox's user may not switch users or write the system (hardened, or not root). */
const NOT_PERMITTED = /Operation not permitted|Permission denied|are you root\?/;

function installFailed(
  installer: Installer,
  specs: readonly string[],
  result: RunResult,
  timeoutMs: number,
): WsError {
  const outputTail = result.output.trim();
  const named = `${installer} ${specs.join(' ')}`;
  const why = result.timedOut
    ? `ran past packages.timeoutMs (${timeoutMs} ms)`
    : result.exitCode === 127
      ? `failed: ${installer === 'apt' ? 'apt-get' : installer === 'pip' ? 'python3' : 'npm'} is not installed in the sandbox (exit 127)`
      : `failed with exit code ${result.exitCode}${
          installer === 'apt' && NOT_PERMITTED.test(outputTail)
            ? " (apt needs root with its capabilities: on Docker, open with privileges: 'standard' and no other user)"
            : ''
        }`;
  return new WsError(
    result.timedOut ? 'TIMEOUT' : 'PACKAGE_INSTALL_FAILED',
    `Installing the workspace's packages (${named}) ${why}${outputTail ? `:\n${outputTail}` : ''}`,
    { details: { installer, packages: [...specs], exitCode: result.exitCode, outputTail } },
  );
}

const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive' } as const;
/** What apt-get says of a package its lists do not have (yet): worth an `apt-get update`. */
const APT_UNKNOWN = /Unable to locate package|has no installation candidate|Couldn't find any package/;

async function installOne(
  sandbox: CompleteSandbox,
  installer: Installer,
  specs: readonly string[],
  options: RunOptions,
): Promise<void> {
  let result: RunResult;
  switch (installer) {
    case 'apt': {
      const argv = ['apt-get', 'install', '-y', '--no-install-recommends', '--', ...specs];
      result = await run(sandbox, argv, APT_ENV, options);
      if (result.exitCode !== 0 && !result.timedOut && APT_UNKNOWN.test(result.output)) {
        const update = await run(sandbox, ['apt-get', 'update'], APT_ENV, options);
        if (update.exitCode !== 0) throw installFailed(installer, specs, update, options.timeoutMs);
        result = await run(sandbox, argv, APT_ENV, options);
      }
      break;
    }
    case 'pip':
      result = await run(
        sandbox,
        ['python3', '-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--', ...specs],
        {},
        options,
      );
      break;
    case 'npm':
      result = await run(
        sandbox,
        ['npm', 'install', '--global', '--no-audit', '--no-fund', '--', ...specs],
        {},
        options,
      );
      break;
  }
  if (result.exitCode !== 0) throw installFailed(installer, specs, result, options.timeoutMs);
}

async function readRecord(
  sandbox: CompleteSandbox,
  path: string,
  options: CallOptions,
): Promise<{ lists: PackageLists | undefined; warning?: string }> {
  let text: string;
  try {
    text = new TextDecoder().decode(
      await sandbox.readFile(path, {
        maxBytes: MAX_RECORD_BYTES,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    );
  } catch (error) {
    if (isWsError(error, 'ABORTED')) throw error;
    if (isWsError(error, 'NOT_FOUND')) return { lists: undefined };
    return { lists: undefined, warning: `The package record ${path} could not be read; installing again` };
  }
  const lists = parsePackageRecord(text);
  return lists
    ? { lists }
    : { lists: undefined, warning: `The package record ${path} is not a valid record; installing again` };
}

/**
 * Replaces the record through a new file renamed over it: a link planted at the record's path is
 * replaced, never followed.
 */
async function writeRecord(
  sandbox: CompleteSandbox,
  path: string,
  lists: PackageLists,
  options: CallOptions,
): Promise<string | undefined> {
  const script = `umask 022; t=$(mktemp ${shellQuote(`${path}.XXXXXX`)}) && cat > "$t" && mv -f "$t" ${shellQuote(path)} || { rm -f "$t"; exit 1; }`;
  try {
    const result = await sandbox.exec(['/bin/sh', '-c', script], {
      stdin: formatPackageRecord(lists),
      timeoutMs: 30_000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (result.exitCode === 0) return undefined;
    return `The installed packages could not be recorded in ${path} (${result.stderrText.trim() || `exit ${result.exitCode}`}); the next open installs them again`;
  } catch (error) {
    if (isWsError(error, 'ABORTED')) throw error;
    return `The installed packages could not be recorded in ${path}; the next open installs them again`;
  }
}

/**
 * Installs `packages` in the sandbox (apt, then pip, then npm), each installer with the specs the
 * sandbox's record does not have yet, then records them all (the record's and these) as installed.
 * Nothing is installed when the record has every spec. The whole run, record included, is held to
 * `packages.timeoutMs`; the signal aborts the installer running (its process group is killed).
 * @throws WsError `PACKAGE_INSTALL_FAILED` (an installer failed; details `{ installer, packages,
 * exitCode, outputTail }`), `TIMEOUT` (the time limit passed; the same details), `ABORTED`.
 */
export async function installPackages(
  sandbox: CompleteSandbox,
  workspaceId: string,
  packages: CheckedPackages,
  options: CallOptions = {},
): Promise<PackageInstallReport> {
  throwIfAborted(options.signal);
  const started = performance.now();
  const path = packageRecordPath(workspaceId);
  const warnings: string[] = [];
  const record = await readRecord(sandbox, path, options);
  if (record.warning) warnings.push(record.warning);
  const missing = missingPackages(packages, record.lists);
  const runOptions: RunOptions = {
    ...options,
    deadline: started + packages.timeoutMs,
    timeoutMs: packages.timeoutMs,
  };
  if (INSTALLERS.some((installer) => missing[installer].length > 0)) {
    for (const installer of INSTALLERS)
      if (missing[installer].length > 0) await installOne(sandbox, installer, missing[installer], runOptions);
    const union = {} as Record<Installer, readonly string[]>;
    for (const installer of INSTALLERS)
      union[installer] = [...new Set([...(record.lists?.[installer] ?? []), ...packages[installer]])];
    const problem = await writeRecord(sandbox, path, union, options);
    if (problem) warnings.push(problem);
  }
  return { installed: missing, durationMs: Math.round(performance.now() - started), warnings };
}
