import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

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

export default defineConfig({
  resolve: { conditions: ['@ws/source'] },
  ssr: { resolve: { conditions: ['@ws/source'] } },
  test: {
    projects,
    reporters: ['verbose'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
