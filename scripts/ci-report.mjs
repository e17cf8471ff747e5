// Where a CI run spent its time: each stage of .ci/run, each test suite (vitest project) and the
// slowest cases. .ci/run prints it when it ends, whether it passed or not.
//
//   node scripts/ci-report.mjs --stages FILE --timings FILE [--slowest N]
//
// --stages: one line per stage, `name<TAB>seconds<TAB>exit code` (written by .ci/run).
// --timings: the JSON written by scripts/test-timings.mjs (the vitest reporter).
import { existsSync, readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const option = (name) => {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
};
const stagesFile = option('--stages');
const timingsFile = option('--timings');
const slowest = Number(option('--slowest') ?? 20);

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const clock = (totalSeconds) => {
  const whole = Math.round(totalSeconds);
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`;
};

/** Prints rows as aligned columns; numbers (and the header above them) align right. */
function table(header, rows) {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => String(row[column]).length)));
  const numeric = header.map(
    (_, column) => rows.length > 0 && rows.every((row) => /^[\d.]+( s)?$|^-$/.test(String(row[column]))),
  );
  for (const row of all) {
    const cells = row.map((cell, column) =>
      numeric[column] ? String(cell).padStart(widths[column]) : String(cell).padEnd(widths[column]),
    );
    console.log(`  ${cells.join('  ').trimEnd()}`);
  }
}

if (stagesFile && existsSync(stagesFile)) {
  const stages = readFileSync(stagesFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [name, elapsed, code] = line.split('\t');
      return { name, elapsed: Number(elapsed), code: Number(code) };
    });
  console.log('\nstages (in the order they ended; "background" stages ran beside the tests)');
  table(
    ['stage', 'time', 'result'],
    stages.map((stage) => [
      stage.name,
      `${stage.elapsed.toFixed(1)} s`,
      stage.code === 0 ? 'ok' : `failed (exit ${stage.code})`,
    ]),
  );
}

if (timingsFile && existsSync(timingsFile)) {
  const timings = JSON.parse(readFileSync(timingsFile, 'utf8'));
  const suites = new Map();
  for (const file of timings.files) {
    const suite = suites.get(file.project) ?? {
      files: 0,
      passed: 0,
      failed: 0,
      skipped: 0,
      first: Number.POSITIVE_INFINITY,
      last: 0,
      busy: 0,
    };
    suite.files += 1;
    for (const state of ['passed', 'failed', 'skipped']) suite[state] += file.counts?.[state] ?? 0;
    const ended = file.endedAt ?? timings.endedAt;
    suite.first = Math.min(suite.first, file.queuedAt);
    suite.last = Math.max(suite.last, ended);
    suite.busy += ended - file.queuedAt;
    suites.set(file.project, suite);
  }
  const sorted = [...suites.entries()].sort((a, b) => b[1].busy - a[1].busy);
  console.log(
    `\ntest suites (npm test took ${clock((timings.endedAt - timings.startedAt) / 1000)}; "span" is first file queued to last file done, "file time" adds up each file's own time)`,
  );
  table(
    ['suite', 'files', 'passed', 'failed', 'skipped', 'span', 'file time'],
    sorted.map(([name, suite]) => [
      name,
      suite.files,
      suite.passed,
      suite.failed,
      suite.skipped,
      seconds(suite.last - suite.first),
      seconds(suite.busy),
    ]),
  );
  const totals = sorted.reduce(
    (sum, [, suite]) => ({
      passed: sum.passed + suite.passed,
      failed: sum.failed + suite.failed,
      skipped: sum.skipped + suite.skipped,
    }),
    { passed: 0, failed: 0, skipped: 0 },
  );
  console.log(
    `  all: ${timings.files.length} files, ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`,
  );

  const unfinished = timings.files.filter((file) => file.endedAt === undefined);
  if (unfinished.length > 0)
    console.log(`  never finished: ${unfinished.map((file) => `${file.project} ${file.file}`).join(', ')}`);

  // A run fails without a failed case when a hook, an import or an unhandled rejection fails: say
  // which, last, where a truncated log still shows it.
  const fileErrors = timings.files.filter((file) => (file.errors ?? []).length > 0);
  const unhandled = timings.unhandledErrors ?? [];
  const failedOutsideCases = fileErrors.length > 0 || unhandled.length > 0;

  const cases = [...timings.cases].sort((a, b) => b.durationMs - a.durationMs).slice(0, slowest);
  console.log(`\nthe ${cases.length} slowest cases`);
  table(
    ['time', 'suite', 'case'],
    cases.map((entry) => [seconds(entry.durationMs), entry.project, `${entry.file} > ${entry.name}`]),
  );

  // Under WS_TEST_CPU=1 with one file at a time: what each case cost the whole machine.
  const measured = timings.cases.filter((entry) => typeof entry.cpuAtStart === 'number');
  if (measured.length > 0) {
    const cpu = (entry) => entry.cpuAtEnd - entry.cpuAtStart;
    console.log(`\nthe ${Math.min(slowest, measured.length)} cases that cost the machine the most CPU time`);
    table(
      ['cpu', 'suite', 'case'],
      [...measured]
        .sort((a, b) => cpu(b) - cpu(a))
        .slice(0, slowest)
        .map((entry) => [seconds(cpu(entry)), entry.project, `${entry.file} > ${entry.name}`]),
    );
  }

  if (failedOutsideCases) {
    console.log(`\nerrors outside any case (the run ended ${timings.reason ?? 'failed'})`);
    for (const file of fileErrors)
      for (const error of file.errors) console.log(`  ${file.project} ${file.file}: ${error}`);
    for (const error of unhandled) console.log(`  unhandled: ${error}`);
  }
}
