#!/usr/bin/env node
// Line and branch coverage of each package's src, from the JSON summary a coverage run writes
// (`npm run test:coverage`, which runs vitest with V8 coverage into coverage/).
//
//   node scripts/coverage-report.mjs [--summary coverage/coverage-summary.json] [--json FILE]
//   node scripts/coverage-report.mjs --compare BEFORE.json AFTER.json
//
// --json writes the per-package numbers; --compare prints two such files side by side with the
// difference in points, and exits 1 when a package's line coverage fell by more than one point.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    summary: { type: 'string', default: 'coverage/coverage-summary.json' },
    json: { type: 'string' },
    compare: { type: 'string', multiple: true },
  },
  allowPositionals: true,
});

/** Sums a coverage summary's files into packages (`packages/core`, `apps/cli`). */
function perPackage(summaryFile) {
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
  const packages = {};
  for (const [file, counts] of Object.entries(summary)) {
    if (file === 'total') continue;
    const parts = relative(process.cwd(), file).split(sep);
    const index = parts.findIndex((part) => part === 'packages' || part === 'apps');
    if (index === -1) continue;
    const name = `${parts[index]}/${parts[index + 1]}`;
    packages[name] ??= { lines: { total: 0, covered: 0 }, branches: { total: 0, covered: 0 } };
    const into = packages[name];
    for (const kind of ['lines', 'branches']) {
      into[kind].total += counts[kind].total;
      into[kind].covered += counts[kind].covered;
    }
  }
  return Object.fromEntries(
    Object.entries(packages)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, counts]) => [
        name,
        {
          lines: percent(counts.lines),
          branches: percent(counts.branches),
          linesTotal: counts.lines.total,
        },
      ]),
  );
}

const percent = ({ total, covered }) => (total === 0 ? 100 : Math.round((covered / total) * 1000) / 10);

function print(rows, header) {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => String(row[column]).length)),
  );
  for (const row of [header, ...rows])
    console.log(
      row
        .map((cell, column) => String(cell).padEnd(widths[column]))
        .join('  ')
        .trimEnd(),
    );
}

if (values.compare) {
  const [beforeFile, afterFile] =
    values.compare.length === 2 ? values.compare : [values.compare[0], process.argv.at(-1)];
  const before = JSON.parse(readFileSync(beforeFile, 'utf8'));
  const after = JSON.parse(readFileSync(afterFile, 'utf8'));
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const fell = [];
  print(
    names.map((name) => {
      const a = before[name];
      const b = after[name];
      const delta = a && b ? Math.round((b.lines - a.lines) * 10) / 10 : undefined;
      if (delta !== undefined && delta < -1) fell.push(name);
      return [
        name,
        a ? `${a.lines}%` : '-',
        b ? `${b.lines}%` : '-',
        delta === undefined ? '-' : `${delta > 0 ? '+' : ''}${delta}`,
        a ? `${a.branches}%` : '-',
        b ? `${b.branches}%` : '-',
      ];
    }),
    ['package', 'lines before', 'lines after', 'points', 'branches before', 'branches after'],
  );
  if (fell.length > 0) {
    console.log(`\nline coverage fell by more than one point in: ${fell.join(', ')}`);
    process.exit(1);
  }
} else {
  const packages = perPackage(values.summary);
  print(
    Object.entries(packages).map(([name, row]) => [
      name,
      `${row.lines}%`,
      `${row.branches}%`,
      row.linesTotal,
    ]),
    ['package', 'lines', 'branches', 'lines in src'],
  );
  if (values.json) writeFileSync(values.json, `${JSON.stringify(packages, null, 2)}\n`);
}
