import { readdirSync, readFileSync } from 'node:fs';

/** A started process group that an owner may stop. */
export interface ProcessGroup {
  /** Stops every process in the group; resolves once they exited or were sent SIGKILL. */
  stop(): Promise<void>;
  /** False once the group has no process left (then its owner may forget it). */
  alive?(): boolean;
}

/**
 * True while the process group led by `pid` has a running process in it. A zombie (a member that
 * exited and waits for its parent to collect it) does not count: where nobody collects orphans
 * promptly (a container whose PID 1 is node), a group of zombies would otherwise look alive until
 * every stop ran out its grace time. Zombies are told apart through `/proc` on Linux; elsewhere any
 * member counts.
 */
export function groupAlive(pid: number | undefined): boolean {
  return groupExists(pid) && (process.platform !== 'linux' || groupHasLiveMember(pid as number));
}

/** True while the group led by `pid` has any member, zombies included: one signal, no `/proc` scan. */
export function groupExists(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `/proc` lists a member of group `pgid` that is not a zombie (true when `/proc` cannot tell). */
function groupHasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
  }
  return false;
}

/**
 * Resolves once the group led by `pid` has no process left (polled), or after `limitMs`. The poll
 * keeps the event loop alive: a caller awaiting a stop (`close()`) must not see the process exit
 * first, with its group's members never sent SIGKILL.
 */
export function groupEmptied(pid: number | undefined, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  return new Promise((resolve) => {
    const poll = () => {
      if (!groupAlive(pid) || Date.now() >= deadline) resolve();
      else setTimeout(poll, 25);
    };
    poll();
  });
}

/** Sends `signal` to the process group led by `pid`, ignoring a group that is already gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group has already exited.
  }
}

/**
 * Stops a process the way every backend does: `send('TERM')` now, `send('KILL')` once `graceMs` pass
 * without `exited` settling, and `send('KILL')` after it settles too, so that members of a process
 * group that ignore SIGTERM do not outlive their leader. Resolves once the process exited or was
 * sent SIGKILL; until then the host process does not exit on its own. `send` may be asynchronous (a
 * signal sent through another command).
 */
export function stopWithGrace(
  send: (signal: 'TERM' | 'KILL') => unknown,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  const deliver = (signal: 'TERM' | 'KILL') => Promise.resolve(send(signal)).catch(() => {});
  const terminated = deliver('TERM');
  return new Promise((resolve) => {
    // Not unref'd: the process stays up until SIGKILL went out, so nothing outlives it.
    const timer = setTimeout(() => {
      void terminated.then(() => deliver('KILL')).then(() => resolve());
    }, graceMs);
    exited.then(
      () => {
        clearTimeout(timer);
        void terminated.then(() => deliver('KILL')).then(() => resolve());
      },
      () => {},
    );
  });
}

/**
 * The process groups one sandbox started and has not seen exit, so that closing it stops them all.
 * Pass `track` as {@link HostCommandOptions.track} / {@link HostSpawnOptions.track}.
 */
export class ProcessGroups {
  private readonly groups = new Set<ProcessGroup>();

  /** Remembers a group until the function it returns is called (or the group is found empty). */
  readonly track = (group: ProcessGroup): (() => void) => {
    for (const known of this.groups) if (known.alive?.() === false) this.groups.delete(known);
    this.groups.add(group);
    return () => this.groups.delete(group);
  };

  /** Stops every remembered group (SIGTERM, then SIGKILL after the grace time) and forgets them. */
  async stopAll(): Promise<void> {
    const groups = [...this.groups];
    this.groups.clear();
    await Promise.all(groups.map((group) => group.stop()));
  }
}

/**
 * Resolves once `settles` settled (true) or `ms` passed (false), whichever comes first: a bounded
 * wait for a process's end that a caller follows with something firmer (cutting its stream).
 */
export function settledWithin(settles: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    settles.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
