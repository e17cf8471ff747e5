import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { interleave, median, metricRow, ratioRow } from '../harness.mjs';

const script = join(import.meta.dirname, '../fixtures/cold-start.mjs');

function node(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`node ${args.join(' ')} exited with ${code}: ${stderr}`)),
    );
  });
}

export const name = 'cold-start';

/**
 * A fresh process that imports @ws/local, opens a workspace, runs one command and closes, against
 * `node -e 0` started the same way, interleaved.
 */
export async function run({ iterations }) {
  const workdir = await mkdtemp(join(tmpdir(), 'ws-bench-cold-'));
  try {
    const samples = await interleave({
      subject: () => node([script, workdir]),
      floor: () => node(['-e', '0']),
      iterations: Math.min(iterations, 60),
      warmup: 3,
    });
    return [
      ratioRow({
        scenario: 'cold start (fresh process)',
        subject: 'import @ws/local, open, exec true, close',
        floor: 'node -e 0',
        samples,
        target: 1.3,
      }),
      metricRow({
        scenario: 'cold start (fresh process)',
        subject: 'median, whole process',
        value: median(samples.subjectMs),
        unit: 'ms',
      }),
    ];
  } finally {
    await rm(workdir, { recursive: true, force: true });
  }
}
