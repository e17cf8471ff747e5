import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { HostLaunchWrapper } from '@ws/core/backend';

/**
 * bubblewrap forks the sandbox's first process (its PID 1) into a session of its own, and that
 * process dies with bubblewrap only once it has asked the kernel to (`--die-with-parent`). A bwrap
 * signalled in the moment between the two leaves the whole sandbox running with no parent and
 * outside every process group the host signals. So bubblewrap reports the child on a status pipe,
 * and each stop kills that child first: SIGKILL reaches a PID namespace's first process from outside
 * and takes every process in the namespace with it.
 */

/** The arguments that make bubblewrap write its status, the child's pid first, to fd 3. */
export const STATUS_ARGUMENTS = ['--json-status-fd', '3'] as const;

/** Longest a stop waits for bubblewrap to name its child (it does so right after forking it). */
const REPORT_WAIT_MS = 2_000;
/** Most status bytes read for the first line; bubblewrap's is about 200. */
const STATUS_LIMIT = 4_096;
/** Signals whose default action does not end bubblewrap: they leave its child alone too. */
const NOT_ENDING = new Set<NodeJS.Signals>([
  'SIGCHLD',
  'SIGCONT',
  'SIGSTOP',
  'SIGTSTP',
  'SIGTTIN',
  'SIGTTOU',
  'SIGURG',
  'SIGWINCH',
]);

interface Child {
  readonly pid: number;
  /** Its start time in clock ticks since boot, which tells it from a later process given the same pid. */
  readonly started: string;
}

/** The parent pid and start time of `pid`, from `/proc` (undefined once it is gone). */
function processStat(pid: number): { parent: number; started: string } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // `pid (comm) state ppid …`: the fields after the last ')' start at the state, the third field.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { parent: Number(fields[1]), started: fields[19] ?? '' };
}

/** One bwrap process's child, learnt from its status pipe; pass as `wrapper` when starting it. */
export class SandboxInit implements HostLaunchWrapper {
  private readonly named: Promise<Child | undefined>;
  private settle!: (child: Child | undefined) => void;

  constructor() {
    this.named = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  status(stream: Readable, bwrapPid: number | undefined): void {
    let text = '';
    let done = false;
    const finish = (child: Child | undefined) => {
      if (done) return;
      done = true;
      text = '';
      this.settle(child);
    };
    stream.setEncoding('latin1');
    // Read to the end, keeping only the first line: bubblewrap writes its exit line last, and a
    // closed pipe would end it with SIGPIPE instead of the command's exit code.
    stream.on('data', (chunk: string) => {
      if (done) return;
      text += chunk;
      const end = text.indexOf('\n');
      if (end >= 0) finish(this.child(text.slice(0, end), bwrapPid));
      else if (text.length > STATUS_LIMIT) finish(undefined);
    });
    stream.once('close', () => finish(undefined));
    stream.on('error', () => finish(undefined));
  }

  /** The child named by the first status line, if it is still bwrap's own. */
  private child(line: string, bwrapPid: number | undefined): Child | undefined {
    let pid: unknown;
    try {
      pid = (JSON.parse(line) as Record<string, unknown>)['child-pid'];
    } catch {
      return undefined;
    }
    if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 1) return undefined;
    const stat = processStat(pid);
    return stat && stat.parent === bwrapPid ? { pid, started: stat.started } : undefined;
  }

  async signal(signal: NodeJS.Signals): Promise<void> {
    if (NOT_ENDING.has(signal)) return;
    let timer: NodeJS.Timeout | undefined;
    const child = await Promise.race([
      this.named,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), REPORT_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!child || processStat(child.pid)?.started !== child.started) return;
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}
