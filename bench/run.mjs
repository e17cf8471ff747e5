#!/usr/bin/env node
import { writeFile } from 'node:fs/promises';
// Runs the bench scenarios and prints one table of ratios measured in this run; a whole run (no
// scenario named) also writes RESULTS.md and results.json (see README.md).
//   node bench/run.mjs [scenario ...] [--iterations N] [--out DIR] [--json FILE]
import { parseArgs } from 'node:util';
import { printMetrics, printTable } from './harness.mjs';
import { writeResults } from './report.mjs';

const SCENARIOS = [
  'cold-start',
  'local-exec',
  'tools-io',
  'manager',
  'bwrap',
  'docker',
  'e2b',
  'daytona',
  'k8s',
  'opensandbox',
  'search-tree',
  'install-size',
  'peers-local',
  'peers-cloud',
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    iterations: { type: 'string', default: '400' },
    out: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(`node bench/run.mjs [scenario ...] [--iterations N] [--out DIR] [--json FILE]

Scenarios (all when none is named): ${SCENARIOS.join(', ')}
--iterations N  rounds each scenario scales its own from (default 400; the CI smoke uses 4)
--out DIR       write RESULTS.md and results.json there (a whole run writes them to bench/)
--json FILE     write the rows alone as JSON`);
  process.exit(0);
}
const iterations = Number(values.iterations);
if (!Number.isInteger(iterations) || iterations < 1) {
  console.error(`--iterations takes a positive whole number, not ${values.iterations}`);
  process.exit(2);
}
const selected = positionals.length > 0 ? positionals : SCENARIOS;
const unknown = selected.filter((scenario) => !SCENARIOS.includes(scenario));
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  process.exit(2);
}

const started = new Date();
const rows = [];
const skipped = [];
for (const scenario of selected) {
  const module = await import(`./scenarios/${scenario}.mjs`);
  const began = performance.now();
  process.stderr.write(`bench: running ${scenario}…\n`);
  const result = await module.run({ iterations });
  if (result.skipped) {
    process.stderr.write(`bench: ${scenario} skipped: ${result.skipped}\n`);
    skipped.push({ scenario, reason: result.skipped });
    continue;
  }
  process.stderr.write(`bench: ${scenario} done in ${((performance.now() - began) / 1000).toFixed(1)} s\n`);
  rows.push(...result);
}
console.log(`\n@ws bench — node ${process.version}, ${started.toISOString()}\n`);
printTable(rows.filter((row) => row.kind === undefined));
console.log('');
printMetrics(rows.filter((row) => row.kind === 'metric'));
const peers = rows.filter((row) => row.kind === 'peer');
if (peers.length > 0) {
  console.log('');
  for (const row of peers) {
    const value =
      row.medianMs !== undefined
        ? `${row.medianMs.toFixed(1)} ms (p95 ${row.p95Ms.toFixed(1)})`
        : row.missing
          ? `missing: ${row.missing}`
          : `failed: ${row.failed}`;
    console.log(`${row.scenario} · ${row.system}: ${value}`);
  }
}
const out = values.out ?? (positionals.length === 0 ? import.meta.dirname : undefined);
const run = {
  rows,
  skipped,
  iterations,
  started,
  seconds: (Date.now() - started.getTime()) / 1000,
  command: ['node bench/run.mjs', ...process.argv.slice(2)].join(' '),
};
if (out) {
  await writeResults(out, run);
  console.log(`\nwrote ${out}/RESULTS.md and ${out}/results.json`);
}
if (values.json) await writeFile(values.json, `${JSON.stringify(rows, null, 2)}\n`);
