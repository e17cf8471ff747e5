import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { WsError } from '../contracts/errors.js';
import type { Sandbox as WsSandbox } from '../contracts/sandbox.js';

/** This machine (its name and boot), so that records of its own dead processes can be told apart. */
const MACHINE = createHash('sha256')
  .update(hostname())
  .update(
    (() => {
      try {
        return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8');
      } catch {
        return '';
      }
    })(),
  )
  .digest('hex')
  .slice(0, 12);

/** Whether a record names an object that may still be open: another machine's, or a live process of this one. */
function mayBeOpen(record: string): boolean {
  const [machine, pid] = record.split('-');
  if (machine !== MACHINE) return true;
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// $1 folder, $2 this object's file: (re)creates it.
const ATTACH = 'mkdir -p -- "$1" && touch -- "$1/$2"';
/**
 * How far ahead of the sandbox's clock a record may be dated and still count (a clock stepped back
 * meanwhile). Records are touched on that same clock, so one dated later was planted: it never counts
 * as a user, or a sandbox could be kept running for ever by a file dated 2099.
 */
const FUTURE_SLACK_SECONDS = 60;

// $1 folder, $2 this object's file, $3 seconds after which a file is stale: removes this object's
// file and prints the others that are fresh (touched within $3 seconds and not in the future).
const DETACH = `rm -f -- "$1/$2"
[ -d "$1" ] || exit 0
now=$(date +%s)
find "$1" -mindepth 1 -maxdepth 1 -type f -newermt "@$(( now - $3 ))" ! -newermt "@$(( now + ${FUTURE_SLACK_SECONDS} ))" -printf '%f\\n'`;

/**
 * Who uses a shared sandbox: one file per workspace object attached to it, in `folder` inside the
 * sandbox, touched while the object is open. A backend whose `close()` stops or pauses the sandbox does
 * so only when {@link release} finds no other object's file fresh (one older than `staleMs`
 * belongs to a host that went away) and naming an object that may still be open (a record of a dead
 * process of this machine does not).
 */
export class Attachments {
  /** This object's file name: this machine, this process, this object. */
  private readonly name = `${MACHINE}-${process.pid}-${randomUUID().slice(0, 8)}`;

  /**
   * Names this object's record; does no I/O.
   * @param folder Where the records live inside the sandbox.
   * @param staleMs After how long untouched a record belongs to a host that went away, in ms (whole
   *   seconds are what counts: it is rounded up).
   */
  constructor(
    private readonly folder: string,
    private readonly staleMs: number,
  ) {}

  /** Records (or refreshes) this object among the sandbox's users. */
  async touch(sandbox: WsSandbox | undefined): Promise<void> {
    const result = await sandbox?.exec(['sh', '-c', ATTACH, 'sh', this.folder, this.name], {
      cwd: '/',
      timeoutMs: 30_000,
    });
    if (result && result.exitCode !== 0)
      throw new WsError(
        'BACKEND_ERROR',
        `Recording the workspace in its sandbox failed: ${result.stderrText.trim()}`,
      );
  }

  /** Removes this object's record; true when another object's record is fresh. */
  async release(sandbox: WsSandbox | undefined): Promise<boolean> {
    const result = await sandbox
      ?.exec(['sh', '-c', DETACH, 'sh', this.folder, this.name, String(Math.ceil(this.staleMs / 1000))], {
        cwd: '/',
        timeoutMs: 30_000,
      })
      .catch(() => undefined);
    if (result === undefined || result.exitCode !== 0) return false;
    return result.stdoutText.split('\n').some((record) => record !== '' && mayBeOpen(record));
  }
}

// $1 the folder of attachment records: prints the sandbox's clock, then each record's modification
// time and name, in seconds. Changes nothing.
const PROBE = `date +%s
[ -d "$1" ] || exit 0
find "$1" -mindepth 1 -maxdepth 1 -type f -printf '%T@ %f\\n'`;

/** What the attachment records inside a sandbox say about who uses it (see {@link readAttachedRecords}). */
export interface AttachedRecords {
  /** A record touched within the staleness window, of an object that may still be open. */
  readonly fresh: boolean;
  /** When (host clock, ms) a record was last touched, if any. */
  readonly lastTouchedAt: number | undefined;
}

/**
 * Reads the attachment records in `folder` of a running sandbox without changing them, for a reaper.
 * Ages are taken on the sandbox's own clock, so a skew between host and sandbox does not matter. A
 * record of a dead process of this machine is never fresh; one of another machine's process stays
 * fresh until it is `staleMs` old; one dated in the sandbox's future counts for nothing.
 */
export async function readAttachedRecords(
  sandbox: WsSandbox,
  folder: string,
  staleMs: number,
  signal?: AbortSignal,
): Promise<AttachedRecords> {
  const result = await sandbox.exec(['sh', '-c', PROBE, 'sh', folder], {
    cwd: '/',
    timeoutMs: 30_000,
    ...(signal ? { signal } : {}),
  });
  const [now, ...lines] = result.stdoutText.split('\n').filter((line) => line.trim() !== '');
  const sandboxNow = Number(now) * 1000;
  if (result.exitCode !== 0 || !Number.isFinite(sandboxNow))
    throw new WsError(
      'BACKEND_ERROR',
      `Reading the attachment records in ${folder} failed (exit ${result.exitCode}): ${result.stderrText.trim()}`,
    );
  let newest = Number.NEGATIVE_INFINITY;
  let fresh = false;
  for (const line of lines) {
    const space = line.indexOf(' ');
    const touched = Number(line.slice(0, space)) * 1000;
    // A record dated in the sandbox's future was planted: it is no sign of use.
    if (space < 0 || !Number.isFinite(touched) || touched > sandboxNow + FUTURE_SLACK_SECONDS * 1000)
      continue;
    newest = Math.max(newest, touched);
    if (sandboxNow - touched < staleMs && mayBeOpen(line.slice(space + 1))) fresh = true;
  }
  if (newest === Number.NEGATIVE_INFINITY) return { fresh: false, lastTouchedAt: undefined };
  return { fresh, lastTouchedAt: Date.now() - Math.max(0, sandboxNow - newest) };
}
