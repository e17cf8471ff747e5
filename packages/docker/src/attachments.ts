import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '@ws/core/backend';

/**
 * Which host processes use a container: one empty file per attached workspace object, named after
 * its process (pid and start time) in a host folder the container cannot see. Workspace objects with
 * one id, in this process or others, share a container; the last to close removes it. A process that
 * died without closing no longer counts. Nothing here is read from a folder the sandbox can write.
 */

/** When a host process started (clock ticks since boot), or undefined where `/proc` is missing. */
async function startTime(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

async function alive(pid: number, started: string): Promise<boolean> {
  const now = await startTime(pid);
  return now !== undefined ? now === started : processAlive(pid);
}

/** Records this process as a user of the container; returns the record's path. */
export async function recordAttachment(folder: string): Promise<string> {
  const started = (await startTime(process.pid)) ?? '0';
  const path = join(folder, `${process.pid}-${started}-${randomBytes(6).toString('hex')}`);
  await writeFile(path, '', { mode: 0o600, flag: 'wx' });
  return path;
}

/** True when a record other than `own` belongs to a live process; records of dead ones are removed. */
export async function othersAttached(folder: string, own: string | undefined): Promise<boolean> {
  let found = false;
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    const path = join(folder, name);
    if (path === own) continue;
    const match = /^(\d+)-(\d+)-[0-9a-f]+$/.exec(name);
    if (match && (await alive(Number(match[1]), match[2]!))) found = true;
    else await rm(path, { force: true }).catch(() => {});
  }
  return found;
}

/** How many records in `folder` belong to live processes; changes nothing (for the reaper). */
export async function liveAttachments(folder: string): Promise<number> {
  let live = 0;
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    const match = /^(\d+)-(\d+)-[0-9a-f]+$/.exec(name);
    if (match && (await alive(Number(match[1]), match[2]!))) live++;
  }
  return live;
}
