import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Attachments, readAttachedRecords, runHostCommand } from '../src/backend.js';
import type { ExecOptions, Sandbox } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-attachments-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The records' scripts run as commands; here, host commands (as a sandbox runs them inside). */
const sandbox = {
  exec: (argv: readonly string[], options: ExecOptions = {}) =>
    runHostCommand(argv, { cwd: base, env: process.env, timeoutMs: options.timeoutMs }),
} as Sandbox;

let folders = 0;
/** A records folder holding one record of another machine's object, touched at `seconds` (epoch). */
function folderWithRecord(seconds: number): string {
  const folder = join(base, `records-${folders++}`);
  const record = join(folder, 'a1b2c3d4e5f6-4242-0badf00d');
  mkdirSync(folder, { recursive: true });
  writeFileSync(record, '');
  utimesSync(record, seconds, seconds);
  return folder;
}

const now = () => Math.floor(Date.now() / 1000);

describe('attachment records', () => {
  it('count another object touched just now as a user of the sandbox', async () => {
    const folder = folderWithRecord(now());
    expect((await readAttachedRecords(sandbox, folder, 60_000)).fresh).toBe(true);
    const mine = new Attachments(folder, 60_000);
    await mine.touch(sandbox);
    expect(await mine.release(sandbox)).toBe(true);
  });

  it('never count a record dated in the future: a planted file does not keep a sandbox running', async () => {
    // What an agent inside runs: touch -d 2099-01-01 <records>/anything
    const folder = folderWithRecord(Date.UTC(2099, 0, 1) / 1000);
    const seen = await readAttachedRecords(sandbox, folder, 60_000);
    expect(seen.fresh).toBe(false);
    expect(seen.lastTouchedAt).toBeUndefined();
    const mine = new Attachments(folder, 60_000);
    await mine.touch(sandbox);
    expect(await mine.release(sandbox)).toBe(false);
  });

  it('stop counting a record once it is stale', async () => {
    const folder = folderWithRecord(now() - 3_600);
    const seen = await readAttachedRecords(sandbox, folder, 60_000);
    expect(seen.fresh).toBe(false);
    expect(Date.now() - (seen.lastTouchedAt ?? 0)).toBeGreaterThan(3_500_000);
    const mine = new Attachments(folder, 60_000);
    await mine.touch(sandbox);
    expect(await mine.release(sandbox)).toBe(false);
  });
});
