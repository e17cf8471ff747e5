import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalWorkspace } from '@ws/local';
import { interleave, ratioRow } from '../harness.mjs';

function bareSpawn(argv, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', () => {});
    child.stderr.on('data', () => {});
    child.once('error', reject);
    child.once('close', resolve);
  });
}

export const name = 'local-exec';

/** Local exec round trip against a bare child_process.spawn of the same argv. */
export async function run({ iterations }) {
  const workdir = await mkdtemp(join(tmpdir(), 'ws-bench-'));
  const workspace = await LocalWorkspace.open({ hostWorkdir: workdir });
  try {
    const sandbox = workspace.getSandbox();
    const argv = ['true'];
    const samples = await interleave({
      subject: () => sandbox.exec(argv),
      floor: () => bareSpawn(argv, workdir),
      iterations,
    });
    return [
      ratioRow({
        scenario: 'exec round trip',
        subject: "local exec(['true'])",
        floor: 'bare spawn',
        samples,
        target: 1.15,
      }),
    ];
  } finally {
    await workspace.close();
    await rm(workdir, { recursive: true, force: true });
  }
}
