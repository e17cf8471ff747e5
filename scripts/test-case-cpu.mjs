// A vitest setup file (vitest.config.ts adds it under WS_TEST_CPU=1): records the whole machine's CPU
// time around each case in the case's meta, which scripts/test-timings.mjs writes out. Run with one
// test file at a time, the difference is what the case cost, the processes it started, Docker and the
// emulators included:
//
//   WS_TEST_CPU=1 VITEST_MAX_WORKERS=1 WS_TEST_TIMINGS=/tmp/timings.json npm test
//   node scripts/ci-report.mjs --timings /tmp/timings.json
import { afterEach, beforeEach } from 'vitest';
import { machineCpuMs } from './machine-cpu.mjs';

beforeEach((context) => {
  context.task.meta.cpuAtStart = machineCpuMs();
});
afterEach((context) => {
  context.task.meta.cpuAtEnd = machineCpuMs();
});
