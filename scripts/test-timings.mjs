// A vitest reporter that records where a test run spends its time: when each test file was queued
// and when it ended (so files running side by side show as overlapping spans), and each case's
// duration and state. It writes one JSON file, which scripts/ci-report.mjs turns into tables.
// vitest.config.ts adds it when WS_TEST_TIMINGS names the file to write:
//
//   WS_TEST_TIMINGS=/tmp/timings.json npm test
//   node scripts/ci-report.mjs --timings /tmp/timings.json
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';

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

  onTestModuleEnd(testModule) {
    const entry = this.files.get(testModule.moduleId);
    if (!entry) return;
    entry.endedAt = Date.now();
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
      });
    }
    entry.counts = counts;
    const errors = testModule.errors();
    if (errors.length > 0) entry.errors = errors.map((error) => String(error.message).split('\n')[0]);
  }

  onTestRunEnd() {
    mkdirSync(dirname(this.outputFile), { recursive: true });
    writeFileSync(
      this.outputFile,
      JSON.stringify({
        startedAt: this.startedAt,
        endedAt: Date.now(),
        files: [...this.files.values()],
        cases: this.cases,
      }),
    );
  }
}
