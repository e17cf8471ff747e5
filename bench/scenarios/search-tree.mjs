import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalWorkspace } from '@ws/local';
import { interleave, ratioRow } from '../harness.mjs';
import { ensureTree } from '../tree.mjs';

export const name = 'search-tree';

function runRg(args) {
  return runProcess('rg', args);
}

function runProcess(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let bytes = 0;
    child.stdout.on('data', (chunk) => {
      bytes += chunk.length;
    });
    child.stderr.on('data', () => {});
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 || code === 1 ? resolve(bytes) : reject(new Error(`${command} exited ${code}`)),
    );
  });
}

function hasRipgrep() {
  return new Promise((resolve) => {
    const child = spawn('rg', ['--version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

/** Grep and Glob on a 100 000-file tree against bare ripgrep with the same walk. */
export async function run({ iterations }) {
  if (!(await hasRipgrep())) return { skipped: 'ripgrep (rg) is not installed' };
  const tree = ensureTree();
  const workdir = await mkdtemp(join(tmpdir(), 'ws-bench-search-'));
  const workspace = await LocalWorkspace.open({ hostWorkdir: workdir });
  const rounds = Math.max(5, Math.min(15, Math.round(iterations / 25)));
  try {
    const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
    const excludes = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl'].flatMap((dir) => ['--glob', `!${dir}`]);
    const grepInput = { pattern: 'needle_\\d+', path: tree };
    const first = await tools.Grep.call(grepInput);
    if (first.isError) throw new Error(first.content[0].text);
    const grepSamples = await interleave({
      subject: async () => {
        const result = await tools.Grep.call(grepInput);
        if (result.isError) throw new Error(result.content[0].text);
      },
      floor: () =>
        runRg([
          '--no-config',
          '--hidden',
          ...excludes,
          '--max-columns',
          '500',
          '-l',
          '-e',
          'needle_\\d+',
          '--',
          tree,
        ]),
      iterations: rounds,
      warmup: 2,
    });
    const globInput = { pattern: '**/*.ts', path: tree };
    const globSamples = await interleave({
      subject: async () => {
        const result = await tools.Glob.call(globInput);
        if (result.isError) throw new Error(result.content[0].text);
      },
      floor: () => runRg(['--files', '--hidden', '--no-ignore', '-g', '**/*.ts', ...excludes, tree]),
      iterations: rounds,
      warmup: 2,
    });
    // Newest first needs every match's mtime: ripgrep's listing with a stat of each file is that
    // floor (what Glob itself runs, less its parsing, sorting and the tool around it).
    const timedSamples = await interleave({
      subject: async () => {
        const result = await tools.Glob.call(globInput);
        if (result.isError) throw new Error(result.content[0].text);
      },
      floor: () =>
        runProcess('sh', [
          '-c',
          `rg "$@" | xargs -0 -r stat --printf '%.9Y\\t%n\\0'`,
          'sh',
          '--files',
          '--null',
          '--hidden',
          '--no-ignore',
          '-g',
          '**/*.ts',
          ...excludes,
          tree,
        ]),
      iterations: rounds,
      warmup: 2,
    });
    return [
      ratioRow({
        scenario: 'Grep 100k files',
        subject: 'Grep files_with_matches',
        floor: 'rg -l (same flags)',
        samples: grepSamples,
        target: 1.05,
      }),
      ratioRow({
        scenario: 'Glob 100k files',
        subject: 'Glob **/*.ts (newest first)',
        floor: 'rg --files -g',
        samples: globSamples,
        target: 1.2,
      }),
      ratioRow({
        scenario: 'Glob 100k files',
        subject: 'Glob **/*.ts (newest first)',
        floor: 'rg --files -g | xargs stat (the mtimes)',
        samples: timedSamples,
        target: 1.2,
      }),
    ];
  } finally {
    await workspace.close();
    await rm(workdir, { recursive: true, force: true });
  }
}
