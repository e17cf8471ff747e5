import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// One run over every package that has a test/ folder, so `npm test` ends with one pass/fail count.
// Packages resolve each other to their TypeScript sources (the "@ws/source" export condition), so
// tests never run against a stale build.
const packageDirs = ['packages', 'apps'].flatMap((group) =>
  existsSync(group) ? readdirSync(group).map((name) => join(group, name)) : [],
);
// docs/ checks the README examples.
const projects = [...packageDirs, 'docs']
  .filter((dir) => existsSync(join(dir, 'test')))
  .map((dir) => ({
    extends: true as const,
    test: {
      name: dir === 'docs' ? '@ws/docs' : `@ws/${dir.split('/')[1]}`,
      root: dir,
      include: ['test/**/*.test.ts'],
    },
  }));

/**
 * The longest files first, across projects (vitest's own order takes one project after another),
 * so the run does not end waiting on one long file started last. Durations come from vitest's
 * cache of earlier runs; without one (a fresh clone, CI) the conformance files go first, as they
 * are the longest by far, then the rest by size as vitest does.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const key = (file: TestSpecification) =>
      `${file.project.name}:${file.moduleId.slice(this.ctx.config.root.length + 1)}`;
    const known = files.every((file) => cache.getFileTestResults(key(file)) !== undefined);
    const weight = (file: TestSpecification): number => {
      if (known) return cache.getFileTestResults(key(file))?.duration ?? 0;
      const conformance = /\/test\/contract[^/]*\.test\.ts$/.test(file.moduleId) ? 1e12 : 0;
      return conformance + (cache.getFileStats(key(file))?.size ?? 0);
    };
    return [...files].sort((a, b) => weight(b) - weight(a));
  }
}

// Which conformance case runs on which target (packages/contract-tests/matrix.json): a case decided by
// the shared engine or the gateway runs on the few targets that together take every route, one
// decided by the backend on every backend. WS_CONFORMANCE_MATRIX=off runs every case everywhere.
const conformanceMatrix =
  process.env.WS_CONFORMANCE_MATRIX ?? resolve(import.meta.dirname, 'packages/contract-tests/matrix.json');

export default defineConfig({
  resolve: { conditions: ['@ws/source'] },
  ssr: { resolve: { conditions: ['@ws/source'] } },
  test: {
    projects,
    reporters: process.env.WS_TEST_TIMINGS
      ? ['verbose', ['./scripts/test-timings.mjs', { outputFile: process.env.WS_TEST_TIMINGS }]]
      : ['verbose'],
    // Two test files at once: on a 2-core machine the suites are CPU-bound, and more workers only
    // add contention (timing-sensitive cases then fail). Each runs in its own process.
    // VITEST_MAX_WORKERS overrides it.
    maxWorkers: 2,
    env: { WS_CONFORMANCE_MATRIX: conformanceMatrix },
    // WS_TEST_CPU=1: each case's meta holds the machine's CPU time around it (scripts/test-case-cpu.mjs).
    setupFiles:
      process.env.WS_TEST_CPU === '1' ? [resolve(import.meta.dirname, 'scripts/test-case-cpu.mjs')] : [],
    sequence: { sequencer: LongestFirst },
    // `npm run test:coverage`: V8 coverage of every package's src, summed up per package by
    // scripts/coverage-report.mjs (the conformance matrix must not lose a package's lines).
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
      reporter: ['json-summary', 'json'],
      reportsDirectory: 'coverage',
    },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
