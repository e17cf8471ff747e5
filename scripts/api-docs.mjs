// Builds the API reference of every published entry point (each package's `exports`, read from its
// TypeScript sources) with TypeDoc, and fails when an exported declaration is undocumented, a doc link
// is broken, or a type the entry points use is not exported from any of them.
//
//   node scripts/api-docs.mjs            writes docs/.api (HTML), prints what it checked
//   node scripts/api-docs.mjs --out DIR  writes DIR instead
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Application, LogLevel } from 'typedoc';

const root = resolve(import.meta.dirname, '..');
const outIndex = process.argv.indexOf('--out');
const out = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : join(root, 'docs/.api');

/** Every published package's entry points, as their TypeScript sources (the `@ws/source` condition). */
function entryPoints() {
  const found = [];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const file = join(root, group, name, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8'));
      if (pkg.private || !pkg.exports) continue;
      for (const [subpath, target] of Object.entries(pkg.exports)) {
        const source = typeof target === 'object' && target ? target['@ws/source'] : undefined;
        if (typeof source !== 'string' || !source.endsWith('.ts')) continue;
        found.push({
          packageName: pkg.name,
          name: subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`,
          path: join(root, group, name, source),
        });
      }
    }
  }
  return found;
}

const entries = entryPoints();
const app = await Application.bootstrap({
  entryPoints: entries.map((entry) => entry.path),
  entryPointStrategy: 'resolve',
  tsconfig: join(root, 'tsconfig.base.json'),
  compilerOptions: { customConditions: ['@ws/source'], noEmit: true },
  // The type check (npm run typecheck, one program over the same sources) reports type errors;
  // TypeDoc only converts and validates the documentation.
  skipErrorChecking: true,
  name: '@ws',
  readme: 'none',
  excludePrivate: true,
  excludeProtected: false,
  excludeInternal: true,
  excludeExternals: true,
  sort: ['source-order'],
  validation: { notExported: true, invalidLink: true, notDocumented: true },
  // Every package's own declarations must be documented (by default only the first package's are).
  packagesRequiringDocumentation: [...new Set(entries.map((entry) => entry.packageName))],
  treatWarningsAsErrors: true,
  disableSources: true,
  treatValidationWarningsAsErrors: true,
  logLevel: LogLevel.Warn,
});
const project = await app.convert();
if (!project) {
  console.error('api-docs: TypeDoc could not convert the entry points (see above)');
  process.exit(1);
}
app.validate(project);
if (app.logger.hasErrors() || app.logger.hasWarnings()) {
  console.error(
    `api-docs: ${app.logger.errorCount + app.logger.warningCount} problem(s) in the API reference (see above)`,
  );
  process.exit(1);
}
await app.generateDocs(project, out);
console.log(
  `api-docs: ${entries.length} entry points documented (${entries.map((entry) => entry.name).join(', ')}); written to ${out}`,
);
