import type { CompleteSandbox, ExecResult } from '../contracts/sandbox.js';

// The memory cgroup's count of processes killed for memory, as the sandbox sees its own cgroup:
// `memory.events` (cgroup v2) or `memory.oom_control` (v1, with the count since Linux 4.13).
const OOM_COUNT_SCRIPT =
  'cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; true';

/** Reads the `oom_kill` count out of cgroup files; undefined when they hold none. */
export function parseOomKills(text: string): number | undefined {
  const match = /^oom_kill (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * How many processes the memory limit of the sandbox's own cgroup has killed so far, read inside the
 * sandbox (a container's or a Pod's cgroup, as the sandbox sees it); undefined where it cannot tell.
 * A provider whose sandbox has a memory limit passes this (or its own count) as the session's `oomKills`.
 */
export async function cgroupOomKills(sandbox: Pick<CompleteSandbox, 'exec'>): Promise<number | undefined> {
  // From /: the first count is read at open, before the workdir may exist.
  const result = await sandbox.exec(['/bin/sh', '-c', OOM_COUNT_SCRIPT], {
    cwd: '/',
    timeoutMs: 10_000,
    maxOutputBytes: 4096,
  });
  return parseOomKills(result.stdoutText);
}

/** Whether a command's result says it was killed by SIGKILL (what the kernel's OOM killer sends). */
function killed(result: ExecResult): boolean {
  return !result.timedOut && (result.signal === 'SIGKILL' || result.exitCode === 137);
}

/**
 * The sandbox with `exec` results marked `outOfMemory` when a command killed by SIGKILL was the
 * memory limit's doing: the kill count read after such a command is compared with the one before.
 * The count is read once now and after each killed command only, so other commands cost nothing.
 */
export async function withOomReports(
  sandbox: CompleteSandbox,
  oomKills: () => Promise<number | undefined>,
): Promise<CompleteSandbox> {
  let seen = await oomKills().catch(() => undefined);
  const exec: CompleteSandbox['exec'] = async (argv, options) => {
    const result = await sandbox.exec(argv, options);
    if (!killed(result)) return result;
    const now = await oomKills().catch(() => undefined);
    if (now === undefined) return result;
    const outOfMemory = seen !== undefined && now > seen;
    seen = now;
    return outOfMemory ? { ...result, outOfMemory: true } : result;
  };
  return new Proxy(sandbox, {
    get(target, key) {
      if (key === 'exec') return exec;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
