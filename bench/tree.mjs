// Generates (once, cached under bench/.data) the search tree the Grep and Glob scenarios use:
// 100 000 files in nested directories, about 1 GB of text, plus a .git directory that searches skip.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const TREE_VERSION = 2;

function rng(seed) {
  let state = seed >>> 0;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 0x100000000;
  };
}

const WORDS =
  'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega const let function return import export class interface type await async'.split(
    ' ',
  );
const EXTENSIONS = ['.ts', '.js', '.py', '.md', '.json', '.txt', '.go', '.rs'];

/**
 * Returns the tree's root, generating it first if needed. `files` regular files spread over
 * 100 × 10 × 10 directories (each file ~`averageBytes`), 1 in 50 holding `needle_<n>`, and a .git
 * directory of 2 000 files that all hold the needle.
 */
export function ensureTree({ files = 100_000, averageBytes = 10_000 } = {}) {
  const root = join(here, '.data', `tree-${files}-${averageBytes}`);
  const stamp = join(root, '.complete');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === String(TREE_VERSION)) return root;
  rmSync(root, { recursive: true, force: true });
  const random = rng(1234);
  const started = Date.now();
  process.stderr.write(
    `bench: generating ${files} files (~${Math.round((files * averageBytes) / 1e6)} MB) in ${root}…\n`,
  );
  const line = () =>
    Array.from(
      { length: 8 + Math.floor(random() * 8) },
      () => WORDS[Math.floor(random() * WORDS.length)],
    ).join(' ');
  const body = (index, needle) => {
    const target = averageBytes * (0.5 + random());
    const lines = [];
    let size = 0;
    while (size < target) {
      const text = line();
      lines.push(text);
      size += text.length + 1;
    }
    if (needle) lines.splice(Math.floor(random() * lines.length), 0, `const marker = "needle_${index}";`);
    return `${lines.join('\n')}\n`;
  };
  const made = new Set();
  for (let index = 0; index < files; index++) {
    const dir = join(
      root,
      `pkg${String(index % 100).padStart(2, '0')}`,
      `mod${Math.floor(index / 100) % 10}`,
      `part${Math.floor(index / 1000) % 10}`,
    );
    if (!made.has(dir)) {
      mkdirSync(dir, { recursive: true });
      made.add(dir);
    }
    writeFileSync(
      join(dir, `file${index}${EXTENSIONS[index % EXTENSIONS.length]}`),
      body(index, index % 50 === 0),
    );
  }
  const git = join(root, '.git', 'objects');
  for (let index = 0; index < 2000; index++) {
    const dir = join(git, String(index % 100).padStart(2, '0'));
    if (index < 100) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `obj${index}.ts`), `needle_git_${index}\n`);
  }
  writeFileSync(stamp, String(TREE_VERSION));
  process.stderr.write(`bench: tree ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return root;
}
