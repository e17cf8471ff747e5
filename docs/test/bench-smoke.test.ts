import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const ci = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

interface Row {
  kind?: 'metric' | 'peer';
  scenario: string;
  system?: string;
  medianMs?: number;
  ratio?: number;
  missing?: string;
  failed?: string;
}

// A few scenarios at four iterations: the bench, its report and the peers' adapters still run
// (the numbers of so short a run mean nothing and are not checked).
const SCENARIOS = ['cold-start', 'local-exec', 'e2b', 'peers-cloud'];

describe('npm run bench, as a smoke', () => {
  let out: string;
  let results: { rows: Row[]; skipped: { scenario: string; reason: string }[] };
  let markdown: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'ws-bench-smoke-'));
    await run(process.execPath, ['bench/run.mjs', ...SCENARIOS, '--iterations', '4', '--out', out], {
      cwd: root,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    results = JSON.parse(await readFile(join(out, 'results.json'), 'utf8'));
    markdown = await readFile(join(out, 'RESULTS.md'), 'utf8');
  }, 660_000);

  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('runs every scenario it was given (under CI, none skipped for a missing engine)', () => {
    if (ci) expect(results.skipped).toEqual([]);
    const ran = new Set(results.rows.map((row) => row.scenario));
    expect(ran.has('cold start (fresh process)')).toBe(true);
    expect(ran.has('exec round trip')).toBe(true);
    if (!results.skipped.some((skip) => skip.scenario === 'e2b'))
      expect(ran.has('E2B open + first command (emulator)')).toBe(true);
  });

  it('measures @ws and its floor in each ratio row', () => {
    for (const row of results.rows.filter((one) => one.kind === undefined)) {
      expect(row.ratio, row.scenario).toBeGreaterThan(0);
      expect(Number.isFinite(row.ratio), row.scenario).toBe(true);
    }
  });

  it('puts the peers beside @ws and the raw SDK on each cloud scenario, each measured, missing with a reason, or failed with its error', () => {
    const peers = results.rows.filter((row) => row.kind === 'peer');
    if (results.skipped.some((skip) => skip.scenario === 'peers-cloud')) return;
    const scenarios = [...new Set(peers.map((row) => row.scenario))];
    expect(scenarios).toEqual(
      expect.arrayContaining(['E2B open + first command', 'Daytona command round trip']),
    );
    for (const scenario of scenarios) {
      const rows = peers.filter((row) => row.scenario === scenario);
      const systems = rows.map((row) => row.system);
      expect(systems, scenario).toEqual(
        expect.arrayContaining(['@ws', 'raw SDK', 'OpenAI Agents SDK', 'Mastra']),
      );
      for (const row of rows) {
        if (row.system === '@ws' || row.system === 'raw SDK')
          expect(row.medianMs, `${scenario}: ${row.system} ${row.failed ?? ''}`).toBeGreaterThan(0);
        else expect(row.medianMs !== undefined || Boolean(row.missing) || Boolean(row.failed)).toBe(true);
      }
    }
  });

  it('writes RESULTS.md with the machine, the targets, the peers and the versions', () => {
    for (const heading of ['## Machine', '## Targets', '## @ws against its floor', '## Versions'])
      expect(markdown).toContain(heading);
    if (results.rows.some((row) => row.kind === 'peer'))
      expect(markdown).toContain('## Side by side with the peers');
    expect(markdown).toMatch(/\| node \| v\d+\./);
  });
});
