import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { groupAlive } from '../src/backend.js';

/** The state letter of a process (`R`, `S`, `Z`…), or undefined once it is gone. */
function state(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0];
  } catch {
    return undefined;
  }
}

describe.skipIf(process.platform !== 'linux')('groupAlive', () => {
  it('counts running members of a group, and not members that are only zombies', async () => {
    // The leader (a shell that becomes `sleep 30`) leaves a child that exits at once and is never
    // collected: a zombie in the group while the leader runs.
    const leader = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 30'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const pid = leader.pid as number;
    const zombie = await new Promise<number>((resolve) =>
      leader.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
    );
    for (let attempt = 0; attempt < 100 && state(zombie) !== 'Z'; attempt++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(state(zombie)).toBe('Z');
    expect(groupAlive(pid)).toBe(true);

    // Only the leader runs; once it is gone the group holds at most the zombie, which no longer counts.
    const exited = new Promise((resolve) => leader.once('exit', resolve));
    process.kill(pid, 'SIGKILL');
    await exited;
    expect(groupAlive(pid)).toBe(false);
    expect(groupAlive(undefined)).toBe(false);
  });
});
