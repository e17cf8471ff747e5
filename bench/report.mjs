// Writes one bench run as bench/RESULTS.md (for reading) and results.json (for tools): the machine,
// the versions, each scenario's rows with medians, p95, the floor and the ratios, and the targets.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';

/** The first line a command prints, or undefined when it cannot run. */
function firstLine(command, args) {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    })
      .trim()
      .split('\n')[0];
  } catch {
    return undefined;
  }
}

/** The version of an installed package, as bench/ resolves it. */
export function packageVersion(name) {
  try {
    const path = import.meta.resolve(`${name}/package.json`);
    return JSON.parse(readFileSync(new URL(path), 'utf8')).version;
  } catch {
    try {
      // Packages whose exports do not list package.json: found from their entry.
      let url = new URL(import.meta.resolve(name));
      for (let depth = 0; depth < 6; depth++) {
        url = new URL('..', url);
        try {
          const found = JSON.parse(readFileSync(new URL('package.json', url), 'utf8'));
          if (found.name === name) return found.version;
        } catch {}
      }
    } catch {}
    return undefined;
  }
}

/** What the machine is and runs, for the head of the results. */
export function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model?.trim(),
    cores: cpu.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    node: process.version,
    docker: firstLine('docker', ['version', '--format', '{{.Server.Version}}']),
    bwrap: firstLine('bwrap', ['--version']),
    ripgrep: firstLine('rg', ['--version']),
  };
}

const PACKAGES = [
  '@ws/core',
  'e2b',
  '@daytonaio/sdk',
  '@kubernetes/client-node',
  '@alibaba-group/opensandbox',
  'dockerode',
  '@openai/agents',
  '@openai/agents-extensions',
  'deepagents',
  '@langchain/daytona',
  '@mastra/core',
  '@mastra/docker',
  '@mastra/e2b',
  '@mastra/daytona',
];

const ms = (value) => (value === undefined ? '' : `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`);
const times = (value) => (value === undefined || !Number.isFinite(value) ? '' : `${value.toFixed(2)}×`);
const cell = (text) =>
  String(text ?? '')
    .replaceAll('|', '\\|')
    .replaceAll('\n', ' ');

function table(header, lines) {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...lines.map((line) => `| ${line.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** The side-by-side rows of one scenario, each with its ratio to @ws and to the floor. */
function peerTable(rows) {
  const ours = rows.find((row) => row.system === '@ws' && row.medianMs !== undefined);
  const floor = rows.find(
    (row) => (row.system === 'floor' || row.system === 'raw SDK') && row.medianMs !== undefined,
  );
  return table(
    ['system', 'version', 'n', 'median', 'p95', 'peak RSS', '× @ws', '× floor', 'note'],
    rows.map((row) => {
      const measured = row.medianMs !== undefined;
      return [
        row.system,
        row.version ?? '',
        measured ? row.n : '',
        measured ? ms(row.medianMs) : row.missing ? '**missing**' : '**failed**',
        measured ? ms(row.p95Ms) : '',
        row.peakRssMB === undefined ? '' : `${Math.round(row.peakRssMB)} MB`,
        measured && ours && row !== ours ? times(row.medianMs / ours.medianMs) : '',
        measured && floor && row !== floor ? times(row.medianMs / floor.medianMs) : '',
        [row.missing, row.failed, row.note].filter(Boolean).join('; '),
      ];
    }),
  );
}

/** The Markdown of one run. */
export function renderResults({ rows, skipped, iterations, started, seconds, command }) {
  const info = machine();
  const versions = PACKAGES.map((name) => [name, packageVersion(name) ?? 'not installed']);
  const ratios = rows.filter((row) => row.kind === undefined);
  const metrics = rows.filter((row) => row.kind === 'metric');
  const peers = rows.filter((row) => row.kind === 'peer');
  const targeted = [...ratios, ...metrics].filter((row) => row.target !== undefined);
  const out = [
    '# @ws bench results',
    '',
    `One run of \`${command}\`, ${started.toISOString()}, ${Math.round(seconds)} s, iterations ${iterations}.`,
    'Every ratio compares two things measured interleaved in this run; read `bench/README.md` for what',
    'each row does and how to reproduce it.',
    '',
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['CPU', `${info.cpu} × ${info.cores}`],
        ['memory', `${info.memoryGiB} GiB`],
        ['kernel', info.kernel],
        ['node', info.node],
        ['Docker engine', info.docker ?? 'none'],
        ['bubblewrap', info.bwrap ?? 'none'],
        ['ripgrep', info.ripgrep ?? 'none'],
      ],
    ),
    '',
    '## Targets',
    '',
    table(
      ['scenario', 'subject', 'measured', 'target', ''],
      targeted.map((row) => [
        row.scenario,
        row.subject,
        row.kind === 'metric' ? `${row.value.toFixed(1)} ${row.unit}` : times(row.ratio),
        row.kind === 'metric' ? `≤ ${row.target} ${row.unit}` : `≤ ${row.target}×`,
        row.met ? 'met' : '**missed**',
      ]),
    ),
    '',
    '## @ws against its floor',
    '',
    table(
      ['scenario', 'subject', 'floor', 'n', 'subject median', 'subject p90', 'floor median', 'ratio'],
      ratios.map((row) => [
        row.scenario,
        row.subject,
        row.floor,
        row.n,
        ms(row.subjectMedianMs),
        ms(row.subjectP90Ms),
        ms(row.floorMedianMs),
        times(row.ratio),
      ]),
    ),
    '',
    table(
      ['scenario', 'subject', 'value'],
      metrics.map((row) => [row.scenario, row.subject, `${row.value.toFixed(1)} ${row.unit}`]),
    ),
  ];
  const scenarios = [...new Set(peers.map((row) => row.scenario))];
  if (scenarios.length > 0) {
    out.push(
      '',
      '## Side by side with the peers',
      '',
      "The same operation through each system's public API, systems interleaved round by round. A",
      'system without the feature is **missing** (with the reason), one that did not run is **failed**',
      '(with its error). `× @ws` above 1 means slower than @ws; `× floor` is against the bare operation',
      '(a spawn, ripgrep, the Engine API, the vendor SDK alone).',
    );
    for (const scenario of scenarios) {
      out.push('', `### ${scenario}`, '', peerTable(peers.filter((row) => row.scenario === scenario)));
    }
  }
  if (skipped.length > 0) {
    out.push('', '## Skipped', '', ...skipped.map(({ scenario, reason }) => `- ${scenario}: ${reason}`));
  }
  out.push('', '## Versions', '', table(['package', 'version'], versions), '');
  return out.join('\n');
}

/** Writes RESULTS.md and results.json into `dir`. */
export async function writeResults(dir, run) {
  const markdown = renderResults(run);
  await writeFile(join(dir, 'RESULTS.md'), markdown);
  await writeFile(
    join(dir, 'results.json'),
    `${JSON.stringify(
      {
        command: run.command,
        started: run.started.toISOString(),
        seconds: run.seconds,
        iterations: run.iterations,
        machine: machine(),
        versions: Object.fromEntries(PACKAGES.map((name) => [name, packageVersion(name) ?? null])),
        rows: run.rows,
        skipped: run.skipped,
      },
      null,
      2,
    )}\n`,
  );
}
