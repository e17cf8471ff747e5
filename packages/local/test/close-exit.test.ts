import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const base = mkdtempSync(join(tmpdir(), 'ws-close-exit-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs a script that opens a workspace, leaves a process behind in a command's group and closes. */
function runScript(command: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  const script = `
    import { LocalWorkspace } from ${JSON.stringify(built)};
    const workspace = await LocalWorkspace.open({ hostWorkdir: ${JSON.stringify(join(base, 'work'))} });
    const result = await workspace.getSandbox().exec(['sh', '-c', ${JSON.stringify(command)}], { timeoutMs: ${timeoutMs} });
    console.log('left ' + result.stdoutText.trim());
    await workspace.close();
    console.log('closed');
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.once('close', (code) => resolve({ code, out }));
  });
}

describe('a script that opens and closes a workspace', () => {
  it.each([
    ['a background process that ignores SIGTERM', '(trap "" TERM; exec sleep 30) & echo $!', 10_000],
    [
      'a command that timed out, its background child ignoring SIGTERM',
      '(trap "" TERM; exec sleep 30) & echo $!; sleep 30',
      300,
    ],
  ])(
    'waits for close() and kills %s before it exits',
    async (_name, command, timeoutMs) => {
      if (!existsSync(built))
        throw new Error(`${built} is missing: build the packages first (npm test does)`);
      const { code, out } = await runScript(command, timeoutMs);
      const pid = Number(/left (\d+)/.exec(out)?.[1]);
      expect(pid).toBeGreaterThan(0);
      expect(out).toContain('closed');
      expect(code).toBe(0);
      // Gone, or a zombie about to be reaped by whoever adopted it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      let state = '';
      try {
        state = (await import('node:fs')).readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] ?? '';
      } catch {
        state = 'gone';
      }
      expect(['gone', 'Z']).toContain(alive(pid) ? state : 'gone');
    },
    30_000,
  );
});
