import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { metricRow } from '../harness.mjs';

const exec = promisify(execFile);
const checker = join(import.meta.dirname, '../../scripts/check-packages.mjs');

export const name = 'install-size';

/** What `npm install` of each backend's packed tarballs puts in node_modules (needs the npm registry). */
async function measure({ json }) {
  // A failed package check still measures the installs: the sizes are written before it exits.
  const failure = await exec(process.execPath, [checker, '--sizes-json', json], {
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    () => undefined,
    (error) => error,
  );
  try {
    return JSON.parse(await readFile(json, 'utf8'));
  } catch {
    throw failure ?? new Error('check-packages wrote no sizes');
  }
}

export async function run() {
  const dir = await mkdtemp(join(tmpdir(), 'ws-bench-size-'));
  try {
    const sizes = await measure({ json: join(dir, 'sizes.json') }).catch((error) => ({
      error: `${error.message}\n${error.stdout ?? ''}`.trim(),
    }));
    if ('error' in sizes) return { skipped: `packing or installing failed: ${sizes.error.slice(-2000)}` };
    return sizes.map(({ label, bytes, count }) =>
      metricRow({
        scenario: 'install size (npm, packed tarballs)',
        subject: `${label} (${count} packages)`,
        value: bytes / 1e6,
        unit: 'MB',
        target: label === '@ws/core' ? 5 : undefined,
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
