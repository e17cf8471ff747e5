import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Looking from outside for what a workspace left on the host: for a target's `leftovers`, which the
 * lifecycle cases call after `close()` and after a killed process.
 */

/**
 * Host processes (other than this one) whose working directory is `path` or below it, or whose
 * command line mentions it, as `pid: command line`. Linux only (reads /proc); elsewhere none.
 */
export async function hostProcessesUsing(path: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cwd = await readlink(`/proc/${name}/cwd`).catch(() => '');
    const commandLine = (await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '')).replaceAll(
      '\0',
      ' ',
    );
    if (cwd === path || cwd.startsWith(`${path}/`) || commandLine.includes(path))
      found.push(`${name}: ${commandLine.trim() || `(cwd ${cwd})`}`);
  }
  return found;
}

/** The entries of `folder` whose names match `pattern`, as full paths (none when it is missing). */
export async function entriesMatching(folder: string, pattern: RegExp): Promise<string[]> {
  const names = await readdir(folder).catch(() => [] as string[]);
  return names.filter((name) => pattern.test(name)).map((name) => join(folder, name));
}
