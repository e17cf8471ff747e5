import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  keywords?: string[];
  homepage?: string;
  bugs?: { url?: string };
  repository?: { type?: string; url?: string; directory?: string };
  exports?: Record<string, string | Record<string, string>>;
  publishConfig?: { exports?: Record<string, string | Record<string, string>> };
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
}

const packages = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(root, group))
    .sort()
    .map((name) => {
      const dir = join(group, name);
      return { dir, manifest: JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Manifest };
    })
    .filter(({ manifest }) => !manifest.private),
);

describe('published manifests', () => {
  it('finds the publishable packages', () => {
    expect(packages.map(({ manifest }) => manifest.name)).toEqual(
      expect.arrayContaining(['@ws/core', '@ws/local', '@ws/bwrap', '@ws/docker']),
    );
  });

  for (const { dir, manifest } of packages) {
    describe(manifest.name, () => {
      it('carries the license text and where the project lives', () => {
        expect(manifest.license).toBe('Apache-2.0');
        expect(readFileSync(join(root, dir, 'LICENSE'), 'utf8')).toBe(
          readFileSync(join(root, 'LICENSE'), 'utf8'),
        );
        expect(manifest.repository).toMatchObject({ type: 'git', directory: dir });
        expect(manifest.repository?.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
        expect(manifest.homepage).toContain(dir);
        expect(manifest.bugs?.url).toMatch(/\/issues$/);
        expect(manifest.keywords?.length).toBeGreaterThan(2);
      });

      it('refuses to be packed by npm, which would publish its workspace: ranges', () => {
        expect(manifest.scripts?.prepack).toBe('node ../../scripts/guard-pack.mjs');
      });

      it('exports every subpath with a default condition, and publishes no TypeScript source condition', () => {
        const published = manifest.publishConfig?.exports ?? manifest.exports ?? {};
        for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
          if (typeof target === 'string') continue;
          expect(target.default, `${subpath}`).toBe(target.import);
          const out = published[subpath];
          expect(out, `${subpath} in publishConfig.exports`).toBeDefined();
          if (typeof out === 'object') {
            expect(Object.keys(out)).not.toContain('@ws/source');
            expect(out.default).toBe(target.import);
            expect(out.types).toBe(target.types);
          }
        }
      });
    });
  }

  it('npm pack stops with a message naming pnpm', async () => {
    const error = await run('npm', ['pack', '--dry-run'], { cwd: join(root, 'packages/local') }).then(
      () => undefined,
      (failure: { stderr?: string }) => failure,
    );
    expect(error, 'npm pack of a package with workspace: ranges must fail').toBeDefined();
    expect(error?.stderr).toContain('@ws/core@workspace:*');
    expect(error?.stderr).toContain('Pack or publish it with pnpm');
  });

  it('release builds, type-checks, tests and checks the tarballs before it publishes', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest).scripts ?? {};
    const steps = (scripts.release ?? '').split('&&').map((step) => step.trim());
    expect(steps.at(-1)).toBe('changeset publish');
    // scripts/setup.mjs builds every package with turbo (its telemetry off).
    for (const required of [
      'node scripts/setup.mjs',
      'npm run typecheck',
      'npm test',
      'node scripts/check-packages.mjs',
    ])
      expect(steps.findIndex((step) => step.startsWith(required))).toBeGreaterThanOrEqual(0);
  });
});
