// A vitest reporter that records where a test run spends its time: when each test file was queued
// and when it ended (so files running side by side show as overlapping spans), and each case's
// duration and state. It writes one JSON file, which scripts/ci-report.mjs turns into tables.
// vitest.config.ts adds it when WS_TEST_TIMINGS names the file to write:
//
//   WS_TEST_TIMINGS=/tmp/timings.json npm test
//   node scripts/ci-report.mjs --timings /tmp/timings.json
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { machineCpuMs } from './machine-cpu.mjs';

export default class TestTimings {
  /** @param {{ outputFile: string }} options */
  constructor(options) {
    this.outputFile = options.outputFile;
    /** @type {Map<string, { project: string, file: string, queuedAt: number, endedAt?: number }>} */
    this.files = new Map();
    this.cases = [];
    this.root = process.cwd();
  }

  onInit(vitest) {
    this.root = vitest.config.root;
    this.startedAt = Date.now();
  }

  onTestModuleQueued(testModule) {
    this.files.set(testModule.moduleId, {
      project: testModule.project.name,
      file: relative(this.root, testModule.moduleId),
      queuedAt: Date.now(),
    });
  }

  onTestModuleStart(testModule) {
    const entry = this.files.get(testModule.moduleId);
    if (entry) entry.cpuAtStart = machineCpuMs();
  }

  onTestModuleEnd(testModule) {
    const entry = this.files.get(testModule.moduleId);
    if (!entry) return;
    entry.endedAt = Date.now();
    entry.cpuAtEnd = machineCpuMs();
    entry.state = testModule.state();
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const testCase of testModule.children.allTests()) {
      const result = testCase.result();
      const state = result.state === 'pending' ? 'skipped' : result.state;
      counts[state] = (counts[state] ?? 0) + 1;
      this.cases.push({
        project: entry.project,
        file: entry.file,
        name: testCase.fullName,
        state,
        durationMs: Math.round(testCase.diagnostic()?.duration ?? 0),
        // Under WS_TEST_CPU=1 (scripts/test-case-cpu.mjs): the machine's CPU time around the case.
        ...cpuOf(testCase.meta()),
      });
    }
    entry.counts = counts;
    // A hook that fails belongs to its suite, not to a case: the run fails with every case passed.
    const errors = [
      ...testModule.errors(),
      ...[...testModule.children.allSuites()].flatMap((suite) => suite.errors()),
    ];
    if (errors.length > 0) entry.errors = errors.map(describeError);
  }

  /**
   * @param {ReadonlyArray<unknown>} _modules
   * @param {ReadonlyArray<{ message?: string, name?: string, stack?: string }>} unhandledErrors
   * @param {string} reason
   */
  onTestRunEnd(_modules, unhandledErrors = [], reason = 'passed') {
    mkdirSync(dirname(this.outputFile), { recursive: true });
    writeFileSync(
      this.outputFile,
      JSON.stringify({
        startedAt: this.startedAt,
        endedAt: Date.now(),
        reason,
        files: [...this.files.values()],
        cases: this.cases,
        unhandledErrors: unhandledErrors.map(describeError),
      }),
    );
  }
}

/** The CPU readings a case's meta holds (scripts/test-case-cpu.mjs), when it holds them. */
function cpuOf(meta) {
  const { cpuAtStart, cpuAtEnd } = meta ?? {};
  return typeof cpuAtStart === 'number' && typeof cpuAtEnd === 'number' ? { cpuAtStart, cpuAtEnd } : {};
}

/**
 * An error as a few lines: its message and the first frames of its stack, enough to find where it
 * came from when a run fails outside any case (a hook, an import, an unhandled rejection).
 * @param {{ message?: string, name?: string, stack?: string }} error
 */
function describeError(error) {
  const message = `${error?.name ? `${error.name}: ` : ''}${String(error?.message ?? error)}`;
  const frames = String(error?.stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .slice(0, 4)
    .map((line) => line.trim());
  return [message.split('\n').slice(0, 6).join('\n'), ...frames].join('\n    ');
}
