#!/usr/bin/env node
// Runs the bench scenarios and prints one table of ratios measured in this run.
//   node bench/run.mjs [scenario ...] [--iterations N] [--json FILE]
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { printMetrics, printTable } from './harness.mjs';

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
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { iterations: { type: 'string', default: '400' }, json: { type: 'string' } },
});
const selected = positionals.length > 0 ? positionals : SCENARIOS;
const unknown = selected.filter((scenario) => !SCENARIOS.includes(scenario));
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  process.exit(2);
}

const rows = [];
for (const scenario of selected) {
  const module = await import(`./scenarios/${scenario}.mjs`);
  process.stderr.write(`bench: running ${scenario}…\n`);
  const result = await module.run({ iterations: Number(values.iterations) });
  if (result.skipped) {
    process.stderr.write(`bench: ${scenario} skipped: ${result.skipped}\n`);
    continue;
  }
  rows.push(...result);
}
console.log(`\n@ws bench — node ${process.version}, ${new Date().toISOString()}\n`);
printTable(rows.filter((row) => row.kind !== 'metric'));
console.log('');
printMetrics(rows.filter((row) => row.kind === 'metric'));
if (values.json) await writeFile(values.json, `${JSON.stringify(rows, null, 2)}\n`);
