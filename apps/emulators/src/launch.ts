import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { unimplementedOf } from './http/unimplemented.js';
import { type EmulatorVendor, VENDOR_TABLE } from './vendor-table.js';

/** The `ws-emulator` command of this package (built; from the sources too, it names the build). */
export const EMULATOR_BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** An emulator running as its own process (see {@link launchEmulator}). */
export interface EmulatorProcess {
  /** What it printed to export (`E2B_API_URL`, `DAYTONA_API_KEY`, `KUBECONFIG`, …). */
  readonly env: Readonly<Record<string, string>>;
  /** Its instance: only its own sandboxes are its business. */
  readonly instance: string;
  /**
   * The requests it received and does not implement (`GET /v2/templates`, …), oldest first: a suite
   * checks this is empty, so that no backend call is answered by a route the emulator lacks.
   */
  readonly unimplemented: readonly string[];
  /**
   * Stops it (SIGTERM; SIGKILL when it has not exited within 45 s, its clean-up included) and resolves
   * once it exited; its sandboxes' containers stay.
   */
  stop(): Promise<void>;
}

/** Options of {@link launchEmulator}. */
export interface LaunchEmulatorOptions {
  /** Default: a fresh `ws-<vendor>-<random>`, so emulators of parallel suites leave each other alone. */
  instance?: string;
  /** Copy its request log to this process's stderr. */
  trace?: boolean;
}

/**
 * How long `stop()` waits for the emulator to exit after SIGTERM: more than it may spend finishing
 * accepted deletions (30 s), before it is killed.
 */
const STOP_GRACE_MS = 45_000;

/**
 * Runs `ws-emulator <vendor> --port 0 --quiet --until-stdin-ends --instance … <args>` as its own
 * process (a service apart, as the vendor's is, so that the caller's memory is its own) and resolves
 * with what it printed once it listens; rejects with its log when it exits first. It stops when this
 * process dies, even without `stop()`.
 */
export function launchEmulator(
  vendor: EmulatorVendor,
  args: readonly string[] = [],
  options: LaunchEmulatorOptions = {},
): Promise<EmulatorProcess> {
  if (!existsSync(EMULATOR_BIN))
    return Promise.reject(new Error(`${EMULATOR_BIN} is missing: build @ws/emulators first (npm test does)`));
  const instance = options.instance ?? `ws-${vendor}-${randomBytes(4).toString('hex')}`;
  const child = spawn(
    process.execPath,
    [EMULATOR_BIN, vendor, '--port', '0', '--quiet', '--until-stdin-ends', '--instance', instance, ...args],
    // This process holds the emulator's stdin: when it dies without stop() (a test run cut short,
    // a filtered run whose clean-up never ran), the pipe ends and the emulator stops too.
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  child.stdin.on('error', () => {});
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      exited.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), STOP_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!inTime) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const unimplemented: string[] = [];
  return new Promise<EmulatorProcess>((resolve, reject) => {
    let output = '';
    let log = '';
    let partial = '';
    child.stderr.on('data', (chunk) => {
      // Until it listens, its log is kept for the error; after that, only unimplemented requests.
      if (log.length < 65_536) log += chunk;
      if (options.trace) process.stderr.write(chunk);
      const lines = (partial + chunk).split('\n');
      partial = (lines.pop() ?? '').slice(-4096);
      for (const line of lines) {
        const what = unimplementedOf(line);
        if (what !== undefined) unimplemented.push(what);
      }
    });
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const env = Object.fromEntries(
        [...output.matchAll(/^export ([A-Z0-9_]+)=(.*)$/gm)].map((match) => [match[1]!, match[2]!]),
      );
      if (VENDOR_TABLE[vendor].envKeys.every((key) => key in env))
        resolve({ env, instance, unimplemented, stop });
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`ws-emulator ${vendor} exited (${signal ?? code}) before it listened: ${log.trim()}`)),
    );
  });
}
