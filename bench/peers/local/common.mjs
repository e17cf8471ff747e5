// Helpers shared by the local peer adapters. Every adapter module exports the same shape:
//   system      the name printed in the table ('@ws', 'OpenAI Agents SDK', …)
//   version()   the installed version of the package driven
//   missing     { feature: reason } for each feature the system lacks (features: local, bwrap,
//               docker, files, grep, glob)
//   notes       { feature: text } where the system's semantics differ from @ws's
//   open({ backend, workdir, image, owner, labels }) → a session:
//     run(command)         runs a shell command, throws unless it exits 0
//     write(path, bytes)   writes a file (path absolute on the host, inside workdir)
//     read(path)           reads it back, resolves to its bytes
//     grep(query, path)    searches the tree at `path` ({ regex, literal }), resolves to a count
//     glob(pattern, path)  lists the files under `path` matching `pattern`, resolves to a count
//     close()              releases everything the session holds
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The label every container made by the peers benchmark carries, so that it can be removed by label. */
export const BENCH_LABEL = 'ws-bench-peers';

/** The version in the package.json of the installed package `name`, found from its entry point. */
export function packageVersion(name, entry = name) {
  let dir = dirname(fileURLToPath(import.meta.resolve(entry)));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8'));
      if (manifest.name === name) return manifest.version;
    }
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}

/** An error raised when a session is asked for a feature its system lacks. */
export class MissingFeature extends Error {}

/** Throws unless `backend` is one the adapter's `missing` table does not list. */
export function assertBackend(missing, backend) {
  if (missing[backend]) throw new MissingFeature(missing[backend]);
}

/** `path` (absolute, inside `root`) as a slash-separated path relative to `root` ('.' for the root). */
export function inside(root, path) {
  const rel = relative(root, path);
  if (rel.startsWith('..')) throw new Error(`${path} is outside ${root}`);
  return rel === '' ? '.' : rel.split(sep).join('/');
}

/** The number of non-empty lines of a text. */
export function countLines(text) {
  let count = 0;
  for (const line of String(text).split('\n')) if (line.trim() !== '') count++;
  return count;
}
