import { describe, expect, it } from 'vitest';
import { completeSandbox, createExecResult } from '../src/backend.js';
import { type CompleteSandbox, type FileStat, type Tool, WsError } from '../src/index.js';
import { createBuiltinTools } from '../src/internal/tools/builtin-tools.js';
import { ReadCache } from '../src/internal/tools/read-cache.js';
import { SearchTools } from '../src/internal/tools/search-tools.js';
import { applyPatch } from './patch.js';

// The Edit tool's diff is built from the replacement positions, not from a line diff; this checks it
// against the texts on many random edits. The sandbox is a map of files: only Read and Edit run here.
function memorySandbox(files: Map<string, Uint8Array>): CompleteSandbox {
  return completeSandbox({
    backend: 'memory',
    workdir: '/w',
    capabilities: {
      stat: true,
      list: false,
      remove: false,
      mkdir: false,
      rename: false,
      readStream: true,
      writeStream: false,
      spawn: false,
    },
    async exec() {
      return createExecResult({ exitCode: 1 });
    },
    async readFile(path) {
      const data = files.get(path);
      if (!data) throw new WsError('NOT_FOUND', path);
      return data;
    },
    async readStream(path) {
      const data = files.get(path);
      if (!data) throw new WsError('NOT_FOUND', path);
      return (async function* () {
        yield data;
      })();
    },
    async writeFile(path, data) {
      files.set(path, typeof data === 'string' ? new TextEncoder().encode(data) : data);
    },
    async stat(path): Promise<FileStat> {
      const data = files.get(path);
      if (!data) throw new WsError('NOT_FOUND', path);
      return { type: 'file', size: data.byteLength, mtimeMs: 0, mode: 0o644 };
    },
  });
}

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

describe('Edit diff', () => {
  it('rebuilds the new file from the old with the metadata diff (random replacements)', async () => {
    const files = new Map<string, Uint8Array>();
    const sandbox = memorySandbox(files);
    const tools = Object.fromEntries(
      createBuiltinTools({
        sandbox: () => sandbox,
        workdir: '/w',
        readCache: new ReadCache(),
        search: new SearchTools('posix'),
        modelInputTypes: [],
      }).map((tool): [string, Tool] => [tool.name, tool]),
    );
    const next = random(7);
    const pieces = ['foo', 'bar', '\n', 'baz qux', '\n\n', 'x', 'foo\nbar', ' '];
    let checked = 0;
    for (let round = 0; round < 400; round++) {
      const text = Array.from(
        { length: 5 + Math.floor(next() * 60) },
        () => pieces[Math.floor(next() * pieces.length)],
      ).join('');
      const needle = ['foo', 'bar', '\n', 'o\nb', 'x', 'baz qux\n', 'foo\nbar'][Math.floor(next() * 7)]!;
      const replacement = ['', 'Z', '\n', 'new\nlines\n', 'foo', 'q\n'][Math.floor(next() * 6)]!;
      if (needle === replacement || !text.includes(needle)) continue;
      files.set('/w/f.txt', new TextEncoder().encode(text));
      expect((await tools.Read!.call({ file_path: '/w/f.txt' })).isError).toBe(false);
      const result = await tools.Edit!.call({
        file_path: '/w/f.txt',
        old_string: needle,
        new_string: replacement,
        replace_all: true,
      });
      expect(result.isError, JSON.stringify(result.content)).toBe(false);
      const after = new TextDecoder().decode(files.get('/w/f.txt'));
      expect(after).toBe(text.split(needle).join(replacement));
      expect(
        applyPatch(text, result.metadata?.diff as string),
        `round ${round}: ${JSON.stringify({ text, needle, replacement })}`,
      ).toBe(after);
      checked++;
    }
    expect(checked).toBeGreaterThan(200);
  });
});
