// The packages' type declarations. One TypeScript program over every package's sources
// (tsconfig.build.json, where packages resolve each other to their sources through the @ws/source
// condition) emits a .d.ts next to each source file into node_modules/.cache/ws-types/out, mirroring
// the repository; scripts/setup.mjs runs it after the JavaScript builds. Every package whose manifest
// names declarations (`types`, `exports`, `typesVersions`) then gets its `src/` part of that tree as
// its `dist/`: dist/index.d.ts beside dist/index.js, dist/contracts/tool.d.ts for src/contracts/tool.ts,
// and so on. The .d.ts files in those dist/ folders are this script's alone: one whose source is gone
// is deleted.
//
// Before a new emit is copied, `checkDeclarations` makes sure a consumer installing the tarball can
// use it: every relative import stays inside dist/ and names a file that is there, another @ws package
// is imported by its name and one of its exports, and what the entry points reach imports only the
// package's own dependencies (and peers) and Node's modules.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join, posix } from 'node:path';

export const BUILD_TSCONFIG = 'tsconfig.build.json';
const CACHE = 'node_modules/.cache/ws-types';
const DECLARATION = /\.d\.[cm]?ts$/;

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function cache(root) {
  const config = readJson(join(root, BUILD_TSCONFIG));
  const outDir = config.compilerOptions?.outDir;
  if (typeof outDir !== 'string') throw new Error(`${BUILD_TSCONFIG} names no outDir`);
  return { out: join(root, outDir), stamp: join(root, CACHE, 'fingerprint'), config };
}

/** Files under `dir` (relative, with `/`), recursively; none when it does not exist. */
function walk(dir, prefix = '') {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return walk(join(dir, entry.name), rel);
    return entry.isFile() ? [rel] : [];
  });
}

/** The source folders tsconfig.build.json includes: each of its patterns is a path whose segments are names or `*`. */
function sourceDirs(root, include) {
  let dirs = [''];
  const expand = (pattern) => {
    for (const segment of pattern.split('/')) {
      if (/[?*[\]{}]/.test(segment) && segment !== '*')
        throw new Error(`${BUILD_TSCONFIG}: "${pattern}" is not a path of names and * segments`);
      dirs = dirs.flatMap((dir) => {
        const path = join(root, dir);
        if (segment !== '*') return existsSync(join(path, segment)) ? [posix.join(dir, segment)] : [];
        return existsSync(path)
          ? readdirSync(path, { withFileTypes: true })
              .filter((entry) => entry.isDirectory())
              .map((entry) => posix.join(dir, entry.name))
          : [];
      });
    }
    const found = dirs;
    dirs = [''];
    return found;
  };
  return include.flatMap(expand);
}

/** What tsc emits for a source file, or undefined for a file it does not compile. */
function declarationOf(file) {
  if (DECLARATION.test(file)) return undefined;
  const match = /^(.*)\.([cm]?)tsx?$/.exec(file);
  return match ? `${match[1]}.d.${match[2]}ts` : undefined;
}

/** Every string under `value` (a manifest field) that names a declaration file. */
function declarationPaths(value) {
  if (typeof value === 'string') return DECLARATION.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(declarationPaths);
  if (value && typeof value === 'object') return Object.values(value).flatMap(declarationPaths);
  return [];
}

/** The workspace's packages (packages/* and apps/*), each with what its manifest says about its types. */
function workspacePackages(root) {
  const found = [];
  for (const group of ['packages', 'apps']) {
    if (!existsSync(join(root, group))) continue;
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = `${group}/${name}`;
      const file = join(root, dir, 'package.json');
      if (!existsSync(file)) continue;
      const manifest = readJson(file);
      const named = [
        manifest.types,
        manifest.typings,
        manifest.exports,
        manifest.typesVersions,
        manifest.publishConfig?.exports,
      ].flatMap(declarationPaths);
      const entries = [...new Set(named.map((path) => posix.normalize(path)))];
      found.push({ dir, manifest, entries });
    }
  }
  return found;
}

/**
 * The declarations tsc emits for the sources tsconfig.build.json includes, as
 * `[package dir, [path in dist, path in the emitted tree]]`.
 */
function planned(root) {
  const { out, config } = cache(root);
  const byPackage = new Map();
  for (const dir of sourceDirs(root, config.include ?? [])) {
    const match = /^((?:packages|apps)\/[^/]+)\/src$/.exec(dir);
    if (!match) throw new Error(`${BUILD_TSCONFIG} includes ${dir}, not a package's src folder`);
    const files = [];
    for (const file of walk(join(root, dir))) {
      const declaration = declarationOf(file);
      if (declaration) files.push([declaration, join(out, dir, declaration)]);
    }
    byPackage.set(match[1], files);
  }
  return byPackage;
}

/**
 * A hash of everything the emitted declarations depend on: the tsconfigs, the manifests, the lockfile
 * (the installed dependencies' types) and every source file tsconfig.build.json includes.
 */
export function fingerprint(root) {
  const { config } = cache(root);
  const hash = createHash('sha256');
  const add = (rel) => {
    hash.update(`\0${rel}\0`);
    if (existsSync(join(root, rel))) hash.update(readFileSync(join(root, rel)));
  };
  for (const rel of [BUILD_TSCONFIG, 'tsconfig.base.json', 'package.json', 'pnpm-lock.yaml']) add(rel);
  add('node_modules/typescript/package.json');
  for (const { dir } of workspacePackages(root)) add(`${dir}/package.json`);
  for (const dir of sourceDirs(root, config.include ?? []))
    for (const file of walk(join(root, dir)).sort()) add(`${dir}/${file}`);
  return hash.digest('hex');
}

/** Whether the emitted tree is the one of `print`: its fingerprint recorded and every file there. */
export function emitted(root, print) {
  const { stamp } = cache(root);
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === print && missing(root).length === 0;
}

/** Forgets the recorded emit (before tsc runs: a failed run leaves no tree that looks current). */
export function forget(root) {
  const { stamp } = cache(root);
  if (existsSync(stamp)) unlinkSync(stamp);
}

/**
 * Forgets tsc's own incremental state too: tsc trusts it and would not emit a file it thinks it
 * already wrote, so it goes when a file of the emitted tree is missing.
 */
export function forgetIncremental(root) {
  forget(root);
  const file = cache(root).config.compilerOptions?.tsBuildInfoFile;
  if (typeof file === 'string' && existsSync(join(root, file))) unlinkSync(join(root, file));
}

/** Deletes what the emitted tree holds beyond the plan (tsc leaves the output of a deleted source behind). */
export function prune(root) {
  const { out } = cache(root);
  const keep = new Set([...planned(root).values()].flat().map(([, from]) => from));
  for (const rel of walk(out)) if (!keep.has(join(out, rel))) unlinkSync(join(out, rel));
}

export function record(root, print) {
  const { stamp } = cache(root);
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, print);
}

/** The emitted tree's files missing (what a tsc that trusted stale incremental state did not write). */
export function missing(root) {
  return [...planned(root).values()].flat().filter(([, from]) => !existsSync(from));
}

/** The package name of a bare module specifier (`@scope/name/sub` → `@scope/name`). */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The declaration file a relative import in a declaration names (`./x.js` → `./x.d.ts`). */
function declarationFor(specifier) {
  const match = /^(.*)\.([cm]?)js$/.exec(specifier);
  if (match) return `${match[1]}.d.${match[2]}ts`;
  return DECLARATION.test(specifier) ? specifier : undefined;
}

/**
 * Checks the emitted declarations of every package that publishes types, as they will be in its
 * dist/ (see the top of this file). Returns the problems found, one line each.
 */
export function checkDeclarations(root) {
  const ts = createRequire(join(root, 'package.json'))('typescript');
  const packages = workspacePackages(root);
  const exportsOf = new Map(
    packages.map(({ manifest, entries }) => [
      manifest.name,
      entries.length > 0 ? new Set(Object.keys(manifest.exports ?? { '.': true })) : new Set(),
    ]),
  );
  const plan = planned(root);
  const problems = [];
  for (const { dir, manifest, entries } of packages) {
    if (entries.length === 0) continue;
    const files = new Map((plan.get(dir) ?? []).map(([rel, from]) => [rel, from]));
    const imports = new Map();
    for (const [rel, from] of files) {
      if (!existsSync(from)) {
        problems.push(`${dir}/dist/${rel}: tsc did not emit it`);
        continue;
      }
      const info = ts.preProcessFile(readFileSync(from, 'utf8'), true, true);
      const local = [];
      const bare = [];
      for (const { fileName: specifier } of [...info.importedFiles, ...info.referencedFiles]) {
        if (specifier.startsWith('.') || info.referencedFiles.some((ref) => ref.fileName === specifier)) {
          const target = declarationFor(specifier);
          const resolved = target && posix.normalize(posix.join(posix.dirname(rel), target));
          if (!resolved || resolved.startsWith('../') || !files.has(resolved))
            problems.push(`${dir}/dist/${rel}: imports ${specifier}, which is no declaration in dist/`);
          else local.push(resolved);
        } else if (specifier.startsWith('/') || /^[a-z]:/i.test(specifier)) {
          problems.push(`${dir}/dist/${rel}: imports the absolute path ${specifier}`);
        } else {
          const name = packageName(specifier);
          const subpath = name === specifier ? '.' : `.${specifier.slice(name.length)}`;
          if (exportsOf.has(name) && !exportsOf.get(name).has(subpath))
            problems.push(
              `${dir}/dist/${rel}: imports ${specifier}, which ${name} does not export with types`,
            );
          bare.push(specifier);
        }
      }
      imports.set(rel, { local, bare });
    }
    // What a consumer's compiler reads: the entry points and what they import, file by file.
    const allowed = new Set([
      manifest.name,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
      ...Object.keys(manifest.optionalDependencies ?? {}),
    ]);
    const queue = [];
    for (const entry of entries) {
      if (!entry.startsWith('dist/')) {
        problems.push(`${dir}/package.json: names ${entry}, outside dist/`);
        continue;
      }
      const rel = entry.slice('dist/'.length);
      if (!files.has(rel)) problems.push(`${dir}/package.json: names ${entry}, which no source emits`);
      else queue.push(rel);
    }
    const seen = new Set(queue);
    while (queue.length > 0) {
      const rel = queue.shift();
      const found = imports.get(rel);
      if (!found) continue;
      for (const specifier of found.bare)
        if (!isBuiltin(specifier) && !allowed.has(packageName(specifier)))
          problems.push(
            `${dir}/dist/${rel}: imports ${specifier}, which is not among ${manifest.name}'s dependencies`,
          );
      for (const next of found.local) {
        if (seen.has(next)) continue;
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return problems;
}

/**
 * Copies each type-publishing package's emitted declarations into its dist/ (a file only when it
 * differs) and deletes the declarations there that have no source any more. Returns what it did.
 */
export function syncDeclarations(root) {
  const plan = planned(root);
  let written = 0;
  let deleted = 0;
  let packages = 0;
  for (const { dir, entries } of workspacePackages(root)) {
    if (entries.length === 0) continue;
    const files = plan.get(dir);
    if (!files) throw new Error(`${dir} names declarations, but ${BUILD_TSCONFIG} does not include its src`);
    packages += 1;
    const dist = join(root, dir, 'dist');
    const keep = new Set();
    for (const [rel, from] of files) {
      keep.add(rel);
      const to = join(dist, rel);
      const text = readFileSync(from);
      if (existsSync(to) && readFileSync(to).equals(text)) continue;
      mkdirSync(dirname(to), { recursive: true });
      writeFileSync(to, text);
      written += 1;
    }
    for (const rel of walk(dist)) {
      if (!DECLARATION.test(rel) || keep.has(rel)) continue;
      unlinkSync(join(dist, rel));
      deleted += 1;
      // Folders left empty by it go too (dist/ itself stays).
      for (let folder = dirname(join(dist, rel)); folder !== dist; folder = dirname(folder)) {
        if (readdirSync(folder).length > 0) break;
        rmdirSync(folder);
      }
    }
    for (const entry of entries)
      if (!existsSync(join(root, dir, entry)) || !statSync(join(root, dir, entry)).isFile())
        throw new Error(`${dir}/${entry} is named in its package.json but was not written`);
  }
  return { written, deleted, packages };
}
