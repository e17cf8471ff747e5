// The release workflow, without publishing: `changeset version` on a copy of the repository's
// manifests and changesets (each package gets its CHANGELOG.md and its next version), then
// `pnpm publish --dry-run` of every publishable package (the built packages, as the release packs
// them). Fails when a pending changeset leaves a package without a changelog entry, or a package
// would not publish.
//
//   node scripts/release-dry-run.mjs             both steps (build the packages first)
//   node scripts/release-dry-run.mjs --changelog the changelog step only
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const changelogOnly = process.argv.includes('--changelog');
// The repository's own pnpm (the root devDependency, the version `packageManager` pins): through npx,
// each call would first spend about 3 s resolving it.
const PNPM = join(root, 'node_modules/.bin/pnpm');

function packages() {
  const found = [];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const file = join(root, group, name, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8'));
      found.push({
        dir: join(group, name),
        name: pkg.name,
        version: pkg.version,
        private: pkg.private === true,
      });
    }
  }
  return found;
}

function fail(message) {
  console.error(`release-dry-run: ${message}`);
  process.exit(1);
}

const all = packages();
const ignored = new Set(JSON.parse(readFileSync(join(root, '.changeset/config.json'), 'utf8')).ignore ?? []);
const publishable = all.filter((pkg) => !pkg.private && !ignored.has(pkg.name));
const pending = readdirSync(join(root, '.changeset')).filter(
  (name) => name.endsWith('.md') && name !== 'README.md',
);
const RANK = { patch: 1, minor: 2, major: 3 };
// The largest bump any pending changeset asks for: no package may move further (a peer dependency's
// bump can turn into a major one by changesets' own rules, which would publish 1.0.0 by accident).
const asked = Math.max(
  0,
  ...pending.flatMap((name) =>
    [
      ...readFileSync(join(root, '.changeset', name), 'utf8').matchAll(
        /^['"]?@ws\/[^:]+['"]?:\s*(major|minor|patch)\s*$/gm,
      ),
    ].map((match) => RANK[match[1]]),
  ),
);
function bumpOf(from, to) {
  const [a, b] = [from, to].map((version) => version.split('.').map(Number));
  if (a[0] !== b[0]) return RANK.major;
  if (a[1] !== b[1]) return RANK.minor;
  return a[2] !== b[2] ? RANK.patch : 0;
}

// 1. `changeset version` on a copy: the manifests, the workspace file and the changesets are all it reads.
const copy = mkdtempSync(join(tmpdir(), 'ws-release-'));
try {
  // bench/ is a workspace package too (ignored by changesets, but it must exist for the config to hold).
  const files = ['package.json', 'pnpm-workspace.yaml', '.changeset', 'bench/package.json'];
  for (const pkg of all) {
    files.push(join(pkg.dir, 'package.json'));
    if (existsSync(join(root, pkg.dir, 'CHANGELOG.md'))) files.push(join(pkg.dir, 'CHANGELOG.md'));
  }
  for (const file of files) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    cpSync(join(root, file), join(copy, file), { recursive: true });
  }
  const changeset = join(root, 'node_modules/@changesets/cli/bin.js');
  try {
    execFileSync(process.execPath, [changeset, 'version'], { cwd: copy, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    fail(`changeset version failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`);
  }
  const left = readdirSync(join(copy, '.changeset')).filter(
    (name) => name.endsWith('.md') && name !== 'README.md',
  );
  if (left.length > 0)
    fail(`changeset version left ${left.length} changeset(s) unconsumed: ${left.join(', ')}`);
  for (const pkg of publishable) {
    const manifest = JSON.parse(readFileSync(join(copy, pkg.dir, 'package.json'), 'utf8'));
    const changelog = join(copy, pkg.dir, 'CHANGELOG.md');
    if (pending.length === 0) continue;
    if (!existsSync(changelog)) fail(`${pkg.name}: changeset version wrote no CHANGELOG.md`);
    const text = readFileSync(changelog, 'utf8');
    if (!text.startsWith(`# ${pkg.name}\n`) || !text.includes(`\n## ${manifest.version}\n`))
      fail(`${pkg.name}: CHANGELOG.md has no section for ${manifest.version}`);
    if (bumpOf(pkg.version, manifest.version) > asked)
      fail(
        `${pkg.name} would go from ${pkg.version} to ${manifest.version}, further than any changeset asks (${Object.keys(RANK).find((key) => RANK[key] === asked)})`,
      );
    console.log(
      `  ${pkg.name}: ${pkg.version} → ${manifest.version}, CHANGELOG.md ${text.split('\n').length} lines`,
    );
  }
  const core = publishable.find((pkg) => pkg.name === '@ws/core');
  if (core && pending.length > 0) {
    const head = readFileSync(join(copy, core.dir, 'CHANGELOG.md'), 'utf8')
      .split('\n')
      .slice(0, 12);
    console.log(`\n${head.map((line) => `    ${line}`).join('\n')}\n    …`);
  }
  console.log(
    `release-dry-run: changeset version consumed ${pending.length} changeset(s) into ${publishable.length} changelogs`,
  );
} finally {
  rmSync(copy, { recursive: true, force: true });
}

// 2. `pnpm publish --dry-run` of each package, as `changeset publish` would publish it.
if (!changelogOnly) {
  for (const pkg of publishable) {
    if (!existsSync(join(root, pkg.dir, 'dist'))) fail(`${pkg.name}: no dist/ (build the packages first)`);
    try {
      execFileSync(PNPM, ['publish', '--dry-run', '--no-git-checks'], {
        cwd: join(root, pkg.dir),
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 120_000,
      });
    } catch (error) {
      fail(
        `${pkg.name}: pnpm publish --dry-run failed:\n${error.stdout ?? ''}${error.stderr ?? error.message}`,
      );
    }
    console.log(`  ${pkg.name}@${pkg.version}: pnpm publish --dry-run passed`);
  }
  console.log(`release-dry-run: ${publishable.length} packages would publish`);
}
