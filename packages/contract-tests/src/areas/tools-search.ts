import type { CompleteSandbox, SearchMode, Tool } from '@ws/core';
import { expect } from 'vitest';
import { requireEngine } from '../engines.js';
import { errorText, okText } from '../fixtures.js';
import { conformanceCase, HOSTILE_NAMES } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

/** Glob and Grep, once with ripgrep and once with the POSIX fallback; both must answer the same. */
export function toolsSearchArea(context: AreaContext): void {
  for (const mode of ['ripgrep', 'posix'] as const satisfies readonly SearchMode[]) {
    describe(`tools: Glob and Grep (${mode})`, { decidedBy: 'engine' }, () => {
      let workspace: WorkspaceUnderTest;
      let sandbox: CompleteSandbox;
      let glob: Tool;
      let grep: Tool;
      let root: string;
      let missing: string | undefined;
      const id = (name: string) => `${mode === 'ripgrep' ? 'search' : 'search-posix'}.${name}`;
      const lines = (text: string) => text.split('\n');
      // Paths holding control characters are shown as JSON strings, one per line.
      const paths = (text: string) =>
        lines(text).map((line) => (line.startsWith('"') ? (JSON.parse(line) as string) : line));
      const under = (...names: string[]) => names.map((name) => `${root}/${name}`);

      beforeAll(async () => {
        workspace = await context.create(undefined, { searchMode: mode });
        await workspace.initialize();
        sandbox = workspace.getSandbox();
        if (
          mode === 'ripgrep' &&
          (await sandbox.exec(['sh', '-c', 'command -v rg']).then((result) => result.exitCode !== 0))
        ) {
          missing = requireEngine('ripgrep', 'ripgrep (rg) is not installed in this sandbox');
          console.warn(`[conformance] ${context.target.name}: Glob and Grep (ripgrep) skipped: ${missing}`);
          return;
        }
        const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
        glob = tools.Glob!;
        grep = tools.Grep!;
        root = `${workspace.workdir}/tree`;
        const files: Record<string, string> = {
          'a.ts': 'export const alpha = 1;\n// TODO: alpha\n',
          'b.tsx': 'export const Beta = () => null;\n',
          'notes.md': 'Alpha and beta\nGAMMA line\n',
          'src/c.ts': 'import { alpha } from "../a";\nconst gamma = alpha + 1;\n',
          'src/d.js': 'function delta() {\n  return "delta";\n}\n',
          'src/deep/e.ts': 'export function epsilon() {}\n// todo: epsilon\n',
          'src/deep/script.py': 'def zeta():\n    return "zeta"\n',
          'file1.txt': 'one\n',
          'file2.txt': 'two\n',
          'fileA.txt': 'letter\n',
          '.hidden/h.ts': 'const hidden = "alpha";\n',
          '.git/objects/x.ts': 'const inGit = "alpha";\n',
          '-dash/-rf.ts': 'const dashed = "alpha";\n',
        };
        for (const [name, content] of Object.entries(files))
          await sandbox.writeFile(`${root}/${name}`, content);
        // Distinct mtimes, newest last in this list, so "newest first" has one right answer.
        const order = Object.keys(files);
        for (const [index, name] of order.entries()) {
          await sandbox.exec([
            'touch',
            '-m',
            '-d',
            `@${1_700_000_000 + index * 10}`,
            '--',
            `${root}/${name}`,
          ]);
        }
      }, context.caseTimeoutMs);

      afterAll(async () => {
        await workspace?.close();
      }, context.caseTimeoutMs);

      const searchCase = (name: string, title: string, body: () => Promise<void>) =>
        conformanceCase(context, id(name), title, async (test) => {
          if (missing) test.skip(missing);
          await body();
        });

      searchCase(
        'glob-recursive',
        'Glob: ** finds files at every depth, newest first, hidden included, .git skipped',
        async () => {
          const result = await glob.call({ pattern: '**/*.ts', path: root });
          expect(lines(okText(result))).toEqual(
            under('-dash/-rf.ts', '.hidden/h.ts', 'src/deep/e.ts', 'src/c.ts', 'a.ts'),
          );
          expect(result.metadata).toMatchObject({ count: 5 });
        },
      );

      searchCase('glob-top-level', 'Glob: a pattern without ** matches only at its level', async () => {
        expect(lines(okText(await glob.call({ pattern: '*.ts', path: root })))).toEqual(under('a.ts'));
        expect(lines(okText(await glob.call({ pattern: 'src/*.{ts,js}', path: root })))).toEqual(
          under('src/d.js', 'src/c.ts'),
        );
      });

      searchCase(
        'glob-syntax',
        'Glob: supports ?, character classes, negated classes and braces',
        async () => {
          expect(lines(okText(await glob.call({ pattern: 'file?.txt', path: root })))).toEqual(
            under('fileA.txt', 'file2.txt', 'file1.txt'),
          );
          expect(lines(okText(await glob.call({ pattern: 'file[0-9].txt', path: root })))).toEqual(
            under('file2.txt', 'file1.txt'),
          );
          expect(lines(okText(await glob.call({ pattern: 'file[!0-9].txt', path: root })))).toEqual(
            under('fileA.txt'),
          );
          expect(lines(okText(await glob.call({ pattern: '**/*.{tsx,py}', path: root })))).toEqual(
            under('src/deep/script.py', 'b.tsx'),
          );
          expect(lines(okText(await glob.call({ pattern: 'src/**', path: root })))).toEqual(
            under('src/deep/script.py', 'src/deep/e.ts', 'src/d.js', 'src/c.ts'),
          );
        },
      );

      searchCase(
        'glob-paths',
        'Glob: defaults to the workdir and resolves relative and absolute paths against it',
        async () => {
          expect(lines(okText(await glob.call({ pattern: 'tree/src/*.ts' })))).toEqual(under('src/c.ts'));
          expect(lines(okText(await glob.call({ pattern: '*.ts', path: 'tree/src' })))).toEqual(
            under('src/c.ts'),
          );
          expect(lines(okText(await glob.call({ pattern: `${root}/src/**/*.py` })))).toEqual(
            under('src/deep/script.py'),
          );
          expect(lines(okText(await glob.call({ pattern: './*.md', path: 'tree' })))).toEqual(
            under('notes.md'),
          );
        },
      );

      searchCase('glob-misses', 'Glob: reports no match and a missing directory', async () => {
        expect(okText(await glob.call({ pattern: '**/*.rs', path: root }))).toBe(
          'No files found matching pattern: **/*.rs',
        );
        expect(errorText(await glob.call({ pattern: '*', path: `${root}/nowhere` }))).toBe(
          `Directory not found: ${root}/nowhere`,
        );
        expect(errorText(await glob.call({ pattern: '*', path: `${root}/a.ts` }))).toBe(
          `Directory not found: ${root}/a.ts`,
        );
        expect(errorText(await glob.call({ pattern: 'bad[', path: root }))).toMatch(/Unclosed \[/);
      });

      searchCase('glob-hostile', 'Glob: lists files with hostile names exactly', async () => {
        const base = `${workspace.workdir}/glob-hostile-${mode}`;
        for (const name of HOSTILE_NAMES) await sandbox.writeFile(`${base}/${name}`, 'x');
        const found = paths(okText(await glob.call({ pattern: '**/*', path: base }))).sort();
        expect(found).toEqual(HOSTILE_NAMES.map((name) => `${base}/${name}`).sort());
        // A hostile name as the path argument itself.
        const dir = `${base}/-dir with 'quotes' and \\ $HOME`;
        await sandbox.writeFile(`${dir}/inside.txt`, 'x');
        expect(paths(okText(await glob.call({ pattern: '*.txt', path: dir })))).toEqual([
          `${dir}/inside.txt`,
        ]);
      });

      searchCase(
        'grep-files',
        'Grep: lists matching files sorted by path by default, hidden included, .git skipped',
        async () => {
          const result = await grep.call({ pattern: 'alpha', path: root });
          expect(lines(okText(result))).toEqual(under('-dash/-rf.ts', '.hidden/h.ts', 'a.ts', 'src/c.ts'));
          expect(lines(okText(await grep.call({ pattern: 'alpha', path: 'tree/src' })))).toEqual(
            under('src/c.ts'),
          );
        },
      );

      searchCase('grep-content', 'Grep: content mode with line numbers (default) and without', async () => {
        expect(
          lines(okText(await grep.call({ pattern: 'gamma', path: root, output_mode: 'content' }))),
        ).toEqual([`${root}/src/c.ts:2:const gamma = alpha + 1;`]);
        expect(
          lines(
            okText(await grep.call({ pattern: 'gamma', path: root, output_mode: 'content', '-n': false })),
          ),
        ).toEqual([`${root}/src/c.ts:const gamma = alpha + 1;`]);
        expect(
          lines(
            okText(await grep.call({ pattern: 'gamma', path: `${root}/src/c.ts`, output_mode: 'content' })),
          ),
        ).toEqual(['2:const gamma = alpha + 1;']);
      });

      searchCase('grep-case-and-count', 'Grep: -i ignores case; count mode counts per file', async () => {
        expect(lines(okText(await grep.call({ pattern: 'todo', path: root, '-i': true })))).toEqual(
          under('a.ts', 'src/deep/e.ts'),
        );
        expect(lines(okText(await grep.call({ pattern: 'todo', path: root })))).toEqual(
          under('src/deep/e.ts'),
        );
        expect(
          lines(okText(await grep.call({ pattern: 'a', path: `${root}/src`, output_mode: 'count' }))),
        ).toEqual([`${root}/src/c.ts:2`, `${root}/src/d.js:2`, `${root}/src/deep/script.py:2`]);
      });

      searchCase('grep-context', 'Grep: -A, -B, -C and context show surrounding lines', async () => {
        const path = `${root}/src/d.js`;
        expect(
          lines(okText(await grep.call({ pattern: 'return', path, output_mode: 'content', '-B': 1 }))),
        ).toEqual(['1-function delta() {', '2:  return "delta";']);
        expect(
          lines(okText(await grep.call({ pattern: 'return', path, output_mode: 'content', '-A': 1 }))),
        ).toEqual(['2:  return "delta";', '3-}']);
        const around = ['1-function delta() {', '2:  return "delta";', '3-}'];
        expect(
          lines(okText(await grep.call({ pattern: 'return', path, output_mode: 'content', '-C': 1 }))),
        ).toEqual(around);
        expect(
          lines(okText(await grep.call({ pattern: 'return', path, output_mode: 'content', context: 1 }))),
        ).toEqual(around);
      });

      searchCase('grep-multiline', 'Grep: multiline patterns span lines', async () => {
        expect(okText(await grep.call({ pattern: 'delta\\(\\) \\{\\s+return', path: root }))).toBe(
          'No matches found for pattern: delta\\(\\) \\{\\s+return',
        );
        expect(
          lines(okText(await grep.call({ pattern: 'delta\\(\\) \\{.*return', path: root, multiline: true }))),
        ).toEqual(under('src/d.js'));
      });

      searchCase('grep-filters', 'Grep: glob and type filters', async () => {
        expect(lines(okText(await grep.call({ pattern: 'export', path: root, glob: '*.tsx' })))).toEqual(
          under('b.tsx'),
        );
        expect(lines(okText(await grep.call({ pattern: 'export', path: root, glob: '*.{ts,tsx}' })))).toEqual(
          under('a.ts', 'b.tsx', 'src/deep/e.ts'),
        );
        expect(lines(okText(await grep.call({ pattern: 'e', path: root, glob: '*.py,*.js' })))).toEqual(
          under('src/d.js', 'src/deep/script.py'),
        );
        expect(lines(okText(await grep.call({ pattern: 'e', path: root, glob: 'src/deep/*' })))).toEqual(
          under('src/deep/e.ts', 'src/deep/script.py'),
        );
        expect(lines(okText(await grep.call({ pattern: 'return', path: root, type: 'py' })))).toEqual(
          under('src/deep/script.py'),
        );
        expect(lines(okText(await grep.call({ pattern: 'alpha', path: root, glob: '!*.ts' })))).toEqual([
          'No matches found for pattern: alpha',
        ]);
      });

      searchCase(
        'grep-defaults',
        'Grep: defaults to the workdir; patterns may start with a dash',
        async () => {
          await sandbox.writeFile(`${workspace.workdir}/top-level.txt`, '--flag-like text\n');
          const found = lines(okText(await grep.call({ pattern: '--flag-like' })));
          expect(found).toEqual([`${workspace.workdir}/top-level.txt`]);
        },
      );

      searchCase(
        'grep-pagination',
        'Grep: head_limit 250 by default, offset, and the pagination note',
        async () => {
          const base = `${workspace.workdir}/many-${mode}`;
          await sandbox.exec([
            'sh',
            '-c',
            'mkdir -p "$1" && cd "$1" && i=0; while [ $i -lt 300 ]; do printf "needle %s\\n" $i > "f$(printf %03d $i).txt"; i=$((i+1)); done',
            'sh',
            base,
          ]);
          const first = okText(await grep.call({ pattern: 'needle', path: base }));
          const [list, note] = first.split('\n\n');
          expect(lines(list!).length).toBe(250);
          expect(lines(list!)[0]).toBe(`${base}/f000.txt`);
          expect(note).toBe('[Showing results with pagination = limit: 250]');
          const page = okText(await grep.call({ pattern: 'needle', path: base, head_limit: 10, offset: 20 }));
          const [pageList, pageNote] = page.split('\n\n');
          expect(lines(pageList!)).toEqual(
            Array.from({ length: 10 }, (_, index) => `${base}/f${String(20 + index).padStart(3, '0')}.txt`),
          );
          expect(pageNote).toBe('[Showing results with pagination = limit: 10, offset: 20]');
          const all = okText(await grep.call({ pattern: 'needle', path: base, head_limit: 0 }));
          expect(lines(all).length).toBe(300);
          const tail = okText(await grep.call({ pattern: 'needle', path: base, offset: 295 }));
          expect(lines(tail).length).toBe(5);
          const content = okText(
            await grep.call({
              pattern: 'needle',
              path: base,
              output_mode: 'content',
              head_limit: 3,
              offset: 1,
            }),
          );
          expect(content).toBe(
            `${base}/f001.txt:1:needle 1\n${base}/f002.txt:1:needle 2\n${base}/f003.txt:1:needle 3\n\n[Showing results with pagination = limit: 3, offset: 1]`,
          );
        },
      );

      searchCase('grep-errors', 'Grep: reports no match, a bad regex and a missing path', async () => {
        expect(okText(await grep.call({ pattern: 'no-such-text-anywhere', path: root }))).toBe(
          'No matches found for pattern: no-such-text-anywhere',
        );
        expect(errorText(await grep.call({ pattern: 'unclosed(', path: root }))).toMatch(
          /error \(code \d+\)/,
        );
        expect(errorText(await grep.call({ pattern: 'x', path: `${root}/nowhere` }))).toBe(
          `Error: Path does not exist: ${root}/nowhere`,
        );
      });

      searchCase('grep-hostile', 'Grep: finds text in files with hostile names', async () => {
        const base = `${workspace.workdir}/grep-hostile-${mode}`;
        for (const name of HOSTILE_NAMES) await sandbox.writeFile(`${base}/${name}`, 'findme\n');
        const found = paths(okText(await grep.call({ pattern: 'findme', path: base, head_limit: 0 })));
        expect(found).toEqual(HOSTILE_NAMES.map((name) => `${base}/${name}`).sort());
        // A hostile name as the path argument itself.
        for (const name of HOSTILE_NAMES) {
          expect(
            okText(await grep.call({ pattern: 'findme', path: `${base}/${name}`, output_mode: 'count' })),
            name,
          ).toBe('1');
        }
      });
    });
  }
}
