import type { CompleteSandbox, Sandbox } from '@ws/core';
import { collectBytes, completeSandbox } from '@ws/core/backend';
import { expect } from 'vitest';
import {
  allByteValues,
  conformanceCase,
  expectWsError,
  HOSTILE_NAMES,
  patternBytes,
  sameBytes,
  withEndlessFifo,
} from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

/**
 * A view of `sandbox` with only the three required primitives, so that core's POSIX fallbacks run
 * on this backend's real sandbox.
 */
function primitivesOnly(sandbox: CompleteSandbox): Sandbox {
  return {
    backend: sandbox.backend,
    workdir: sandbox.workdir,
    capabilities: {
      stat: false,
      list: false,
      remove: false,
      mkdir: false,
      rename: false,
      readStream: false,
      writeStream: false,
      spawn: false,
    },
    exec: (argv, options) => sandbox.exec(argv, options),
    readFile: (path, options) => sandbox.readFile(path, options),
    writeFile: (path, data, options) => sandbox.writeFile(path, data, options),
  };
}

async function* chunksOf(data: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < data.byteLength; offset += size) yield data.subarray(offset, offset + size);
}

/** Files: binary safety, large files, hostile names, typed errors, parents; natively and through the fallbacks. */
export function filesArea(context: AreaContext): void {
  for (const variant of ['native', 'posix-fallback'] as const) {
    // Natively, the backend's own file calls decide; through the fallbacks, core's POSIX fallbacks over
    // the backend's exec (whose argv, bytes and exit codes the exec area checks on every target).
    describe(`files (${variant})`, { decidedBy: variant === 'native' ? 'backend' : 'engine' }, () => {
      let workspace: WorkspaceUnderTest;
      let sandbox: CompleteSandbox;
      let base: string;
      const prefix = variant === 'native' ? 'files' : 'files-fallback';
      const id = (name: string) => `${prefix}.${name}`;

      beforeAll(async () => {
        workspace = await context.create();
        await workspace.initialize();
        const live = workspace.getSandbox();
        sandbox = variant === 'native' ? live : completeSandbox(primitivesOnly(live));
        base = `${workspace.workdir}/${variant}`;
        await sandbox.mkdir(base, { recursive: true });
      }, context.caseTimeoutMs);

      afterAll(async () => {
        await workspace?.close();
      }, context.caseTimeoutMs);

      conformanceCase(context, id('all-bytes'), 'round-trips all 256 byte values', async () => {
        const path = `${base}/all-bytes.bin`;
        await sandbox.writeFile(path, allByteValues());
        expect(sameBytes(await sandbox.readFile(path), allByteValues())).toBe(true);
        expect((await sandbox.stat(path)).size).toBe(256);
      });

      conformanceCase(
        context,
        id('text-exact'),
        'writes strings as UTF-8 and keeps CRLF and lone CR',
        async () => {
          const path = `${base}/text.txt`;
          const text = 'line 1\r\nline 2\rline 3\nünï 名 🙂';
          await sandbox.writeFile(path, text);
          expect(new TextDecoder().decode(await sandbox.readFile(path))).toBe(text);
        },
      );

      conformanceCase(
        context,
        id('overwrite'),
        'replaces a longer file with a shorter one exactly',
        async () => {
          const path = `${base}/overwrite.txt`;
          await sandbox.writeFile(path, 'a much longer first version');
          await sandbox.writeFile(path, 'short');
          expect(new TextDecoder().decode(await sandbox.readFile(path))).toBe('short');
        },
      );

      conformanceCase(context, id('empty'), 'round-trips an empty file', async () => {
        const path = `${base}/empty`;
        await sandbox.writeFile(path, new Uint8Array(0));
        expect((await sandbox.readFile(path)).byteLength).toBe(0);
        expect((await sandbox.stat(path)).type).toBe('file');
      });

      conformanceCase(
        context,
        id('read-bounded'),
        'readFile stops at maxBytes with LIMIT_EXCEEDED, and refuses a FIFO a writer fills for ever',
        async () => {
          const path = `${base}/bounded.bin`;
          const data = patternBytes(3 * 1024 * 1024);
          await sandbox.writeFile(path, data);
          await expectWsError(() => sandbox.readFile(path, { maxBytes: 1024 * 1024 }), 'LIMIT_EXCEEDED');
          expect(sameBytes(await sandbox.readFile(path, { maxBytes: data.byteLength }), data)).toBe(true);
          await expectWsError(() => sandbox.readFile(path, { maxBytes: -1 }), 'INVALID_ARGUMENT');
          const fifo = `${base}/endless-${Math.random().toString(36).slice(2, 8)}`;
          // Refused at once, whether its writer still waits or is gone (then opening it would block).
          await withEndlessFifo(sandbox, fifo, async () => {
            await expectWsError(
              () => sandbox.readFile(fifo, { maxBytes: 4 * 1024 * 1024 }),
              'INVALID_ARGUMENT',
            );
            await expectWsError(() => sandbox.readFile(fifo), 'INVALID_ARGUMENT');
          });
        },
      );

      conformanceCase(
        context,
        id('large-file'),
        'round-trips a large file through writeFile/readFile and writeStream/readStream',
        async () => {
          const data = patternBytes(context.largeFileBytes);
          const path = `${base}/large.bin`;
          await sandbox.writeFile(path, data);
          expect(sameBytes(await sandbox.readFile(path), data)).toBe(true);
          const streamedPath = `${base}/large-streamed.bin`;
          await sandbox.writeStream(streamedPath, chunksOf(data, 1024 * 1024 - 7));
          expect((await sandbox.stat(streamedPath)).size).toBe(data.byteLength);
          expect(sameBytes(await collectBytes(await sandbox.readStream(streamedPath)), data)).toBe(true);
        },
        240_000,
      );

      conformanceCase(
        context,
        id('hostile-names'),
        'handles names with spaces, quotes, newlines, unicode and leading dashes',
        async () => {
          const dir = `${base}/hostile`;
          await sandbox.mkdir(dir, { recursive: true });
          for (const name of HOSTILE_NAMES) {
            const path = `${dir}/${name}`;
            await sandbox.writeFile(path, `content of ${name}`);
            expect(new TextDecoder().decode(await sandbox.readFile(path))).toBe(`content of ${name}`);
            expect((await sandbox.stat(path)).type).toBe('file');
            const cat = await sandbox.exec(['cat', '--', path]);
            expect(cat.stdoutText).toBe(`content of ${name}`);
          }
          const listed = (await sandbox.list(dir)).map((entry) => entry.name).sort();
          expect(listed).toEqual([...HOSTILE_NAMES].sort());
          for (const name of HOSTILE_NAMES) {
            await sandbox.rename(`${dir}/${name}`, `${dir}/${name}.moved`);
            expect(await sandbox.exists(`${dir}/${name}`)).toBe(false);
            await sandbox.remove(`${dir}/${name}.moved`);
          }
          expect(await sandbox.list(dir)).toEqual([]);
          const named = `${dir}/-dir with 'quotes'\nand newline`;
          await sandbox.mkdir(named);
          expect((await sandbox.stat(named)).type).toBe('directory');
          await sandbox.remove(named, { recursive: true });
        },
      );

      conformanceCase(
        context,
        id('not-found'),
        'reports a missing path as NOT_FOUND everywhere',
        async () => {
          const missing = `${base}/missing/nothing.txt`;
          await expectWsError(() => sandbox.readFile(missing), 'NOT_FOUND');
          await expectWsError(() => sandbox.stat(missing), 'NOT_FOUND');
          await expectWsError(() => sandbox.list(missing), 'NOT_FOUND');
          await expectWsError(() => sandbox.readStream(missing), 'NOT_FOUND');
          await expectWsError(() => sandbox.remove(missing), 'NOT_FOUND');
          await expectWsError(() => sandbox.rename(missing, `${base}/elsewhere`), 'NOT_FOUND');
          await sandbox.remove(missing, { force: true });
          expect(await sandbox.exists(missing)).toBe(false);
        },
      );

      conformanceCase(
        context,
        id('creates-parents'),
        'creates missing parent directories on write',
        async () => {
          await sandbox.writeFile(`${base}/p1/p2/p3/file.txt`, 'deep');
          expect((await sandbox.stat(`${base}/p1/p2`)).type).toBe('directory');
          await sandbox.writeStream(
            `${base}/s1/s2/file.txt`,
            chunksOf(new TextEncoder().encode('streamed'), 3),
          );
          expect(new TextDecoder().decode(await sandbox.readFile(`${base}/s1/s2/file.txt`))).toBe('streamed');
        },
      );

      conformanceCase(
        context,
        id('wrong-kind'),
        'tells files and directories apart with typed errors',
        async () => {
          await sandbox.mkdir(`${base}/a-dir`, { recursive: true });
          await sandbox.writeFile(`${base}/a-file`, 'x');
          await expectWsError(() => sandbox.readFile(`${base}/a-dir`), 'IS_A_DIRECTORY');
          await expectWsError(() => sandbox.readStream(`${base}/a-dir`), 'IS_A_DIRECTORY');
          await expectWsError(() => sandbox.list(`${base}/a-file`), 'NOT_A_DIRECTORY');
          await expectWsError(() => sandbox.writeFile(`${base}/a-file/child`, 'x'), 'NOT_A_DIRECTORY');
          await expectWsError(() => sandbox.remove(`${base}/a-dir`), 'IS_A_DIRECTORY');
          await expectWsError(() => sandbox.mkdir(`${base}/a-dir`), 'ALREADY_EXISTS');
          await sandbox.mkdir(`${base}/a-dir`, { recursive: true });
          await expectWsError(() => sandbox.mkdir(`${base}/no-parent/child`), 'NOT_FOUND');
          expect(new TextDecoder().decode(await sandbox.readFile(`${base}/a-file`))).toBe('x');
        },
      );

      conformanceCase(
        context,
        id('relative-paths'),
        'resolves relative paths against the workdir',
        async () => {
          await sandbox.writeFile(`${variant}/relative.txt`, 'rel');
          expect(new TextDecoder().decode(await sandbox.readFile(`${base}/relative.txt`))).toBe('rel');
          expect((await sandbox.stat(`./${variant}/../${variant}/relative.txt`)).size).toBe(3);
        },
      );

      conformanceCase(context, id('list-and-stat'), 'lists entries with their types and sizes', async () => {
        const dir = `${base}/listing`;
        await sandbox.mkdir(`${dir}/child`, { recursive: true });
        await sandbox.writeFile(`${dir}/five.txt`, '12345');
        await sandbox.exec(['ln', '-s', 'five.txt', `${dir}/link`]);
        const entries = Object.fromEntries((await sandbox.list(dir)).map((entry) => [entry.name, entry]));
        expect(Object.keys(entries).sort()).toEqual(['child', 'five.txt', 'link']);
        expect(entries.child?.type).toBe('directory');
        expect(entries['five.txt']?.type).toBe('file');
        expect(entries['five.txt']?.size).toBe(5);
        expect(entries.link?.type).toBe('symlink');
        const followed = await sandbox.stat(`${dir}/link`);
        expect(followed.type).toBe('file');
        expect(followed.size).toBe(5);
        expect(Math.abs(followed.mtimeMs - Date.now())).toBeLessThan(10 * 60_000);
      });

      conformanceCase(context, id('remove-tree'), 'removes a directory tree only when asked to', async () => {
        const dir = `${base}/tree`;
        await sandbox.writeFile(`${dir}/a/b/c.txt`, 'c');
        await sandbox.remove(dir, { recursive: true });
        expect(await sandbox.exists(dir)).toBe(false);
      });

      conformanceCase(context, id('rename-replaces'), 'renames over an existing file', async () => {
        await sandbox.writeFile(`${base}/from.txt`, 'new');
        await sandbox.writeFile(`${base}/to.txt`, 'old');
        await sandbox.rename(`${base}/from.txt`, `${base}/to.txt`);
        expect(new TextDecoder().decode(await sandbox.readFile(`${base}/to.txt`))).toBe('new');
        expect(await sandbox.exists(`${base}/from.txt`)).toBe(false);
      });

      conformanceCase(
        context,
        id('invalid-paths'),
        'refuses an empty path or a NUL byte with INVALID_ARGUMENT',
        async () => {
          await expectWsError(() => sandbox.readFile(''), 'INVALID_ARGUMENT');
          await expectWsError(() => sandbox.writeFile('a\0b', 'x'), 'INVALID_ARGUMENT');
          await expectWsError(() => sandbox.stat('a\0b'), 'INVALID_ARGUMENT');
        },
      );
    });
  }
}
