import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(packageDir, 'dist', 'index.js');

// A writer process appends batches of 5 large lines until it is killed with SIGKILL at a random
// moment; whatever it left behind must be whole batches of valid JSON lines.
const WRITER = `
import { LocalWorkspace } from ${JSON.stringify(built)};
const workspace = await LocalWorkspace.open({ hostWorkdir: process.argv[1], workspaceId: 'crash' });
for (let batch = 0; ; batch++) {
  const lines = Array.from({ length: 5 }, (_, line) => ({ batch, line, writer: process.pid, payload: 'p'.repeat(40_000 + line) }));
  await workspace.offloadContext('crash', lines);
}
`;

describe('offloadContext when the writer is killed', () => {
  const workdir = mkdtempSync(join(tmpdir(), 'ws-offload-crash-'));
  afterAll(() => rmSync(workdir, { recursive: true, force: true }));

  it('never leaves a torn line or half a batch', async () => {
    if (!existsSync(built)) throw new Error(`${built} is missing: build the packages first (npm test does)`);
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', WRITER, workdir], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 700));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('close', resolve));
      expect(stderr).toBe('');
    }
    // Merges the writer had handed to its shell may still be finishing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const text = readFileSync(join(workdir, 'sessions', 'crash', 'context.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text
      .slice(0, -1)
      .split('\n')
      .map((line) => JSON.parse(line) as { batch: number; line: number; writer: number });
    expect(lines.length % 5).toBe(0);
    expect(lines.length).toBeGreaterThan(5);
    for (let start = 0; start < lines.length; start += 5) {
      const group = lines.slice(start, start + 5);
      expect(group.map((item) => item.line)).toEqual([0, 1, 2, 3, 4]);
      expect(new Set(group.map((item) => `${item.writer}:${item.batch}`)).size).toBe(1);
    }
  }, 60_000);
});
