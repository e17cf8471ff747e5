import type { CompleteSandbox, Tool } from '@ws/core';
import { expect } from 'vitest';
import { errorText, makePdf, okText, TINY_PNG } from '../fixtures.js';
import { conformanceCase, HOSTILE_NAMES, withEndlessFifo } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Read, Write and Edit: formats, limits, messages and the read-before-change rule. */
export function toolsFilesArea(context: AreaContext): void {
  describe('tools: Read, Write, Edit', { decidedBy: 'engine' }, () => {
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;
    let read: Tool;
    let write: Tool;
    let edit: Tool;
    let dir: string;
    let counter = 0;
    const fresh = (name: string) => `${dir}/${++counter}-${name}`;

    beforeAll(async () => {
      workspace = await context.create();
      await workspace.initialize();
      sandbox = workspace.getSandbox();
      const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
      read = tools.Read!;
      write = tools.Write!;
      edit = tools.Edit!;
      dir = `${workspace.workdir}/rw`;
      await sandbox.mkdir(dir, { recursive: true });
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
    }, context.caseTimeoutMs);

    conformanceCase(context, 'read.numbered', 'numbers lines like cat -n', async () => {
      const path = fresh('three.txt');
      await sandbox.writeFile(path, 'alpha\nbeta\n\tgamma');
      const result = await read.call({ file_path: path });
      expect(okText(result)).toBe('     1\talpha\n     2\tbeta\n     3\t\tgamma');
      expect(result.metadata).toMatchObject({ totalLines: 3, startLine: 1, numLines: 3 });
    });

    conformanceCase(
      context,
      'read.offset-limit',
      'reads limit lines from a 1-based offset, 2 000 by default',
      async () => {
        const path = fresh('many.txt');
        await sandbox.writeFile(
          path,
          Array.from({ length: 2_500 }, (_, index) => `line ${index + 1}`).join('\n'),
        );
        const part = okText(await read.call({ file_path: path, offset: 3, limit: 2 }));
        expect(part).toBe('     3\tline 3\n     4\tline 4');
        const whole = okText(await read.call({ file_path: path })).split('\n');
        expect(whole.length).toBe(2_000);
        expect(whole[1_999]).toBe('  2000\tline 2000');
        const tail = okText(await read.call({ file_path: path, offset: 2_499 })).split('\n');
        expect(tail).toEqual(['  2499\tline 2499', '  2500\tline 2500']);
        expect(okText(await read.call({ file_path: path, offset: 3_000 }))).toMatch(
          /has 2500 lines; offset 3000 is past its end/,
        );
      },
    );

    conformanceCase(
      context,
      'read.long-lines',
      'cuts lines over 2 000 characters and marks them [truncated]',
      async () => {
        const path = fresh('long.txt');
        await sandbox.writeFile(path, `${'x'.repeat(2_500)}\nshort`);
        const lines = okText(await read.call({ file_path: path })).split('\n');
        expect(lines[0]).toBe(`     1\t${'x'.repeat(2_000)}[truncated]`);
        expect(lines[1]).toBe('     2\tshort');
      },
    );

    conformanceCase(context, 'read.newlines', 'shows CRLF and CR files with plain line breaks', async () => {
      const path = fresh('crlf.txt');
      await sandbox.writeFile(path, 'one\r\ntwo\rthree\r\n');
      expect(okText(await read.call({ file_path: path }))).toBe('     1\tone\n     2\ttwo\n     3\tthree');
    });

    conformanceCase(
      context,
      'read.errors',
      'gives the documented messages for relative, missing and directory paths',
      async () => {
        expect(errorText(await read.call({ file_path: 'relative.txt' }))).toBe(
          'Error: file_path must be an absolute path, got: relative.txt',
        );
        const missing = `${dir}/missing.txt`;
        expect(errorText(await read.call({ file_path: missing }))).toBe(
          `Error: File does not exist: ${missing}`,
        );
        expect(errorText(await read.call({ file_path: dir }))).toBe(
          `Error: Path is a directory, not a file: ${dir}`,
        );
      },
    );

    conformanceCase(
      context,
      'read.endless',
      'refuses a FIFO that a writer fills for ever, at once and holding nothing',
      async () => {
        const fifo = fresh('endless');
        await withEndlessFifo(sandbox, fifo, async () => {
          expect(errorText(await read.call({ file_path: fifo }))).toBe(
            `Error: ${fifo} is not a regular file (a FIFO, device or socket); Read shows files.`,
          );
        });
      },
      { decidedBy: 'backend' },
    );

    conformanceCase(
      context,
      'read.empty-and-binary',
      'says when a file is empty, and refuses binary files',
      async () => {
        const empty = fresh('empty.txt');
        await sandbox.writeFile(empty, '');
        expect(okText(await read.call({ file_path: empty }))).toBe(`The file ${empty} is empty.`);
        const binary = fresh('blob.dat');
        await sandbox.writeFile(binary, Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]));
        expect(errorText(await read.call({ file_path: binary }))).toMatch(/is a binary file \(8 bytes\)/);
      },
    );

    conformanceCase(context, 'read.image', 'returns images the model accepts as image content', async () => {
      const path = fresh('pixel.png');
      await sandbox.writeFile(path, TINY_PNG);
      const result = await read.call({ file_path: path });
      expect(result.isError).toBe(false);
      expect(result.content).toEqual([
        { type: 'image', data: TINY_PNG.toString('base64'), mimeType: 'image/png' },
      ]);
      const bmp = fresh('pixel.bmp');
      await sandbox.writeFile(bmp, TINY_PNG);
      expect(errorText(await read.call({ file_path: bmp }))).toMatch(
        /^Error: Unsupported image type image\/bmp/,
      );
    });

    conformanceCase(
      context,
      'read.pdf',
      'returns PDF text page by page, with the 10-page rule and the 20-page cap',
      async () => {
        const small = fresh('small.pdf');
        await sandbox.writeFile(small, makePdf(3));
        const text = okText(await read.call({ file_path: small }));
        expect(text).toBe(
          '--- Page 1/3 ---\nPage 1 text\n\n--- Page 2/3 ---\nPage 2 text\n\n--- Page 3/3 ---\nPage 3 text',
        );
        expect(okText(await read.call({ file_path: small, pages: '2' }))).toBe(
          '--- Page 2/3 ---\nPage 2 text',
        );
        expect(okText(await read.call({ file_path: small, pages: ' 2 - 9 ' }))).toBe(
          '--- Page 2/3 ---\nPage 2 text\n\n--- Page 3/3 ---\nPage 3 text',
        );
        const large = fresh('large.pdf');
        await sandbox.writeFile(large, makePdf(25));
        expect(errorText(await read.call({ file_path: large }))).toMatch(
          /has 25 pages, more than 10\. Pass `pages`/,
        );
        const range = okText(await read.call({ file_path: large, pages: '11-12' }));
        expect(range).toBe('--- Page 11/25 ---\nPage 11 text\n\n--- Page 12/25 ---\nPage 12 text');
        expect(errorText(await read.call({ file_path: large, pages: '1-21' }))).toMatch(
          /at most 20 pages per call/,
        );
        expect(errorText(await read.call({ file_path: large, pages: 'abc' }))).toMatch(/Invalid pages "abc"/);
        expect(errorText(await read.call({ file_path: large, pages: '0' }))).toMatch(/pages start at 1/);
        expect(errorText(await read.call({ file_path: large, pages: '5-3' }))).toMatch(
          /first page is after the last/,
        );
        expect(errorText(await read.call({ file_path: large, pages: '26' }))).toMatch(/has 25 pages/);
        const broken = fresh('broken.pdf');
        await sandbox.writeFile(broken, 'not a pdf at all');
        expect(errorText(await read.call({ file_path: broken }))).toMatch(/not a readable PDF/);
      },
    );

    conformanceCase(
      context,
      'write.new-file',
      'creates a file and its parents and returns a diff from /dev/null',
      async () => {
        const path = `${dir}/new/deeper/file.txt`;
        const result = await write.call({ file_path: path, content: 'one\ntwo\n' });
        expect(okText(result)).toBe(`The file ${path} has been written successfully (3 lines).`);
        expect(decode(await sandbox.readFile(path))).toBe('one\ntwo\n');
        expect(result.metadata).toMatchObject({ file_path: path, occurrences: 1 });
        expect(result.metadata?.diff).toBe(`--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,2 @@\n+one\n+two\n`);
      },
    );

    conformanceCase(
      context,
      'write.read-first',
      'refuses to overwrite a file that was not read, or changed since',
      async () => {
        const path = fresh('existing.txt');
        await sandbox.writeFile(path, 'original\n');
        expect(errorText(await write.call({ file_path: path, content: 'new' }))).toBe(
          `Error: File ${path} exists but has not been read yet. You must read the file first before writing to it.`,
        );
        okText(await read.call({ file_path: path }));
        await sandbox.writeFile(path, 'changed!\n');
        expect(errorText(await write.call({ file_path: path, content: 'new' }))).toMatch(
          /has not been read yet.*changed since it was last read/s,
        );
        expect(decode(await sandbox.readFile(path))).toBe('changed!\n');
        okText(await read.call({ file_path: path }));
        const result = await write.call({ file_path: path, content: 'replaced\n' });
        expect(okText(result)).toBe(`The file ${path} has been written successfully (2 lines).`);
        expect(result.metadata?.diff).toBe(
          `--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n-changed!\n+replaced\n`,
        );
        // What a tool wrote counts as read: a second write needs no new Read.
        okText(await write.call({ file_path: path, content: '' }));
        expect(decode(await sandbox.readFile(path))).toBe('');
      },
    );

    conformanceCase(context, 'write.errors', 'refuses relative paths and directories', async () => {
      expect(errorText(await write.call({ file_path: 'rel.txt', content: 'x' }))).toBe(
        'Error: file_path must be an absolute path, got: rel.txt',
      );
      expect(errorText(await write.call({ file_path: dir, content: 'x' }))).toBe(
        `Error: Path is a directory, not a file: ${dir}`,
      );
    });

    conformanceCase(
      context,
      'edit.replace',
      'replaces one occurrence after a Read and returns a diff',
      async () => {
        const path = fresh('edit.txt');
        await sandbox.writeFile(path, 'a\nb\nc\nd\ne\nf\ng\n');
        expect(errorText(await edit.call({ file_path: path, old_string: 'd', new_string: 'D' }))).toBe(
          'Error: To edit a file, you must first read it using the Read tool.',
        );
        okText(await read.call({ file_path: path }));
        const result = await edit.call({ file_path: path, old_string: 'd\n', new_string: 'D1\nD2\n' });
        expect(okText(result)).toBe(`Successfully replaced 1 occurrence in ${path}`);
        expect(decode(await sandbox.readFile(path))).toBe('a\nb\nc\nD1\nD2\ne\nf\ng\n');
        expect(result.metadata).toMatchObject({ file_path: path, occurrences: 1 });
        expect(result.metadata?.diff).toBe(
          `--- a/${path}\n+++ b/${path}\n@@ -1,7 +1,8 @@\n a\n b\n c\n-d\n+D1\n+D2\n e\n f\n g\n`,
        );
      },
    );

    conformanceCase(
      context,
      'edit.occurrences',
      'reports missing and repeated matches, and replaces all on request',
      async () => {
        const path = fresh('repeat.txt');
        await sandbox.writeFile(path, 'x = 1\nx = 2\nx = 3\n');
        okText(await read.call({ file_path: path }));
        expect(errorText(await edit.call({ file_path: path, old_string: 'y', new_string: 'z' }))).toBe(
          `Error: old_string not found in ${path}`,
        );
        expect(errorText(await edit.call({ file_path: path, old_string: 'x', new_string: 'y' }))).toBe(
          `Error: old_string appears 3 times in ${path}. Set replace_all=true to replace all occurrences, or make old_string more specific.`,
        );
        const result = await edit.call({
          file_path: path,
          old_string: 'x',
          new_string: 'y',
          replace_all: true,
        });
        expect(okText(result)).toBe(`Successfully replaced all 3 occurrences in ${path}`);
        expect(result.metadata).toMatchObject({ occurrences: 3 });
        expect(decode(await sandbox.readFile(path))).toBe('y = 1\ny = 2\ny = 3\n');
      },
    );

    conformanceCase(context, 'edit.errors', 'gives the documented messages for bad edits', async () => {
      const missing = `${dir}/nope.txt`;
      expect(errorText(await edit.call({ file_path: missing, old_string: 'a', new_string: 'b' }))).toBe(
        `Error: File not found: ${missing}`,
      );
      expect(errorText(await edit.call({ file_path: 'rel.txt', old_string: 'a', new_string: 'b' }))).toBe(
        'Error: file_path must be an absolute path, got: rel.txt',
      );
      expect(errorText(await edit.call({ file_path: missing, old_string: 'a', new_string: 'a' }))).toBe(
        'Error: old_string and new_string must be different.',
      );
      expect(errorText(await edit.call({ file_path: missing, old_string: '', new_string: 'a' }))).toMatch(
        /old_string must not be empty/,
      );
    });

    conformanceCase(
      context,
      'edit.two-quick-edits',
      'keeps both of two Edits made within one second (Read, Edit, Edit, Read)',
      async () => {
        const path = fresh('quick.txt');
        // Every version of the file gets one modification time, as versions written within one
        // second may: mtime-based caches cannot tell them apart, a content hash can.
        const pinned = 1_700_000_000;
        const pin = async () => {
          const touched = await sandbox.exec(['touch', '-m', '-d', `@${pinned}`, '--', path]);
          expect(touched.exitCode, touched.stderrText).toBe(0);
        };
        await sandbox.writeFile(path, 'first\nsecond\n');
        await pin();
        okText(await read.call({ file_path: path }));
        okText(await edit.call({ file_path: path, old_string: 'first', new_string: 'FIRST' }));
        await pin();
        okText(await edit.call({ file_path: path, old_string: 'second', new_string: 'SECOND' }));
        await pin();
        expect((await sandbox.exec(['stat', '-c', '%Y', '--', path])).stdoutText.trim()).toBe(String(pinned));
        expect(okText(await read.call({ file_path: path }))).toBe('     1\tFIRST\n     2\tSECOND');
      },
    );

    conformanceCase(
      context,
      'edit.same-second-change',
      'notices a change made behind its back in the same second, with the same size',
      async () => {
        const path = fresh('sneaky.txt');
        await sandbox.writeFile(path, 'value = 1\n');
        okText(await read.call({ file_path: path }));
        await sandbox.writeFile(path, 'value = 2\n');
        expect(errorText(await edit.call({ file_path: path, old_string: 'value', new_string: 'v' }))).toBe(
          'Error: To edit a file, you must first read it using the Read tool. The file changed since it was last read.',
        );
        expect(decode(await sandbox.readFile(path))).toBe('value = 2\n');
      },
    );

    conformanceCase(
      context,
      'edit.crlf',
      'keeps CRLF line endings when editing with plain newlines',
      async () => {
        const path = fresh('windows.txt');
        await sandbox.writeFile(path, 'one\r\ntwo\r\nthree\r\n');
        okText(await read.call({ file_path: path }));
        okText(await edit.call({ file_path: path, old_string: 'one\ntwo', new_string: 'ONE\nTWO\nTWO-B' }));
        expect(decode(await sandbox.readFile(path))).toBe('ONE\r\nTWO\r\nTWO-B\r\nthree\r\n');
      },
    );

    conformanceCase(
      context,
      'edit.not-utf8',
      'refuses to edit a file that is not UTF-8, leaving it intact',
      async () => {
        const path = fresh('latin1.txt');
        const bytes = Uint8Array.from([0x63, 0x61, 0x66, 0xe9, 0x0a]);
        await sandbox.writeFile(path, bytes);
        okText(await read.call({ file_path: path }));
        expect(errorText(await edit.call({ file_path: path, old_string: 'caf', new_string: 'CAF' }))).toBe(
          `Error: ${path} is not UTF-8 text; Edit would corrupt it.`,
        );
        expect([...(await sandbox.readFile(path))]).toEqual([...bytes]);
      },
    );

    conformanceCase(
      context,
      'tools.hostile-paths',
      'reads, writes and edits files with hostile names',
      async () => {
        const base = `${dir}/hostile`;
        for (const name of HOSTILE_NAMES) {
          const path = `${base}/${name}`;
          const label = JSON.stringify(name);
          okText(await write.call({ file_path: path, content: `hello ${label}\n` }));
          expect(okText(await read.call({ file_path: path }))).toBe(`     1\thello ${label}`);
          okText(await edit.call({ file_path: path, old_string: 'hello', new_string: 'bye' }));
          expect(decode(await sandbox.readFile(path))).toBe(`bye ${label}\n`);
        }
      },
    );

    conformanceCase(context, 'tools.agents-separate', 'keeps read-before-edit memory per agent', async () => {
      const path = fresh('shared.txt');
      await sandbox.writeFile(path, 'shared\n');
      const [readA] = (await workspace.listTools({ agentId: 'agent-a' })).filter(
        (tool) => tool.name === 'Read',
      );
      const [editB] = (await workspace.listTools({ agentId: 'agent-b' })).filter(
        (tool) => tool.name === 'Edit',
      );
      const [editA] = (await workspace.listTools({ agentId: 'agent-a' })).filter(
        (tool) => tool.name === 'Edit',
      );
      okText(await readA!.call({ file_path: path }));
      expect(
        errorText(await editB!.call({ file_path: path, old_string: 'shared', new_string: 'b' })),
      ).toMatch(/must first read it/);
      okText(await editA!.call({ file_path: path, old_string: 'shared', new_string: 'a' }));
    });
  });
}
