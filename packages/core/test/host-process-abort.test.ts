import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { spawnHostProcess } from '../src/backend.js';

describe.skipIf(process.platform === 'win32')('spawnHostProcess and an abort', () => {
  it('stops a process whose abort came while it was starting', async () => {
    const controller = new AbortController();
    // The abort lands while the process is being started (after the first check, before the
    // process is handed back): no 'abort' event will fire for it again.
    const starting = spawnHostProcess(['sleep', '30'], {
      cwd: tmpdir(),
      env: process.env,
      signal: controller.signal,
      killGraceMs: 100,
    });
    controller.abort();
    const child = await starting;
    const outcome = await Promise.race([
      child.exited.then((exit) => exit.signal ?? `exit ${exit.exitCode}`),
      new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
    ]);
    expect(outcome).toMatch(/^SIG(TERM|KILL)$/);
  }, 20_000);
});
