import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearWriterLeftovers, GcLedger } from '../src/backend.js';

const base = mkdtempSync(join(tmpdir(), 'ws-leftovers-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const aged = new Date(Date.now() - 3_600_000);

/** A file named as a killed writer's temporary file, an hour old. */
function plantLeftover(path: string): void {
  writeFileSync(path, 'left over');
  utimesSync(path, aged, aged);
}

describe('clearWriterLeftovers', () => {
  it('never follows a folder swapped for a link: files outside the roots survive', async () => {
    const root = join(base, 'workdir');
    const outside = join(base, 'host-files');
    mkdirSync(root, { recursive: true });
    mkdirSync(outside, { recursive: true });
    // Host files named like leftovers, which the reaper must never reach.
    const precious = ['.ws-abcdef.tmp', '.append-999999999-abc-def'].map((name) => join(outside, name));
    for (const path of precious) plantLeftover(path);
    // What a hostile agent runs in its workdir: a folder that keeps becoming a link to the host's files.
    // The folder is one briefly and a link for a millisecond, over and over.
    const swap = `const fs = require('node:fs');
const pause = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  try { fs.mkdirSync('d'); } catch {}
  try { fs.rmdirSync('d'); } catch {}
  try { fs.symlinkSync(process.argv[1], 'd'); } catch {}
  Atomics.wait(pause, 0, 0, 1);
  try { fs.unlinkSync('d'); } catch {}
}`;
    const swapper = spawn(process.execPath, ['-e', swap, outside], { cwd: root, stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    try {
      for (let round = 0; round < 2_000; round += 1) {
        const ledger = new GcLedger({ olderThanMs: 0 });
        await clearWriterLeftovers(ledger, [root]);
        for (const path of precious) expect(existsSync(path), `round ${round}: ${path}`).toBe(true);
      }
    } finally {
      swapper.kill('SIGKILL');
    }
    // A leftover really inside the root is still found and removed.
    mkdirSync(join(root, 'sessions'), { recursive: true });
    plantLeftover(join(root, 'sessions', '.ws-123456.tmp'));
    const ledger = new GcLedger({ olderThanMs: 0 });
    await clearWriterLeftovers(ledger, [root, join(root, 'sessions')]);
    expect(ledger.removed.map((resource) => resource.name)).toEqual([
      join(root, 'sessions', '.ws-123456.tmp'),
    ]);
    expect(existsSync(join(root, 'sessions', '.ws-123456.tmp'))).toBe(false);
  });

  it('removes a leftover folder without following a link inside it', async () => {
    const root = join(base, 'staging');
    const outside = join(base, 'host-keep');
    mkdirSync(join(root, '.skill-staging-999999999-abc', 'inner'), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'keep.txt'), 'mine');
    const { symlinkSync } = await import('node:fs');
    symlinkSync(outside, join(root, '.skill-staging-999999999-abc', 'inner', 'escape'));
    utimesSync(join(root, '.skill-staging-999999999-abc'), aged, aged);
    const ledger = new GcLedger({ olderThanMs: 0 });
    await clearWriterLeftovers(ledger, [root]);
    expect(existsSync(join(root, '.skill-staging-999999999-abc'))).toBe(false);
    expect(existsSync(join(outside, 'keep.txt'))).toBe(true);
  });
});
