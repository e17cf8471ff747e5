import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { e2bBundlePath, loadEnvdDescriptors } from '../src/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'ws-e2b-descriptors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('envd descriptors from the installed e2b bundle', () => {
  it('finds process.Process and filesystem.Filesystem with the methods the emulator serves', () => {
    const descriptors = loadEnvdDescriptors();
    expect(descriptors.bundlePath).toBe(e2bBundlePath());
    const process = descriptors.process.methods.map((method) => `${method.localName}:${method.methodKind}`);
    expect(process).toEqual(
      expect.arrayContaining([
        'start:server_streaming',
        'connect:server_streaming',
        'list:unary',
        'sendInput:unary',
        'closeStdin:unary',
        'sendSignal:unary',
      ]),
    );
    const filesystem = descriptors.filesystem.methods.map((method) => method.localName);
    expect(filesystem).toEqual(expect.arrayContaining(['stat', 'listDir', 'makeDir', 'move', 'remove']));
    // The fields the handlers read and write, by their JSON names.
    const start = descriptors.process.method.start!;
    expect(start.input.fields.map((field) => field.localName)).toEqual(['process', 'pty', 'tag', 'stdin']);
    const entry = descriptors.filesystem.file.messages.find((message) => message.name === 'EntryInfo');
    expect(entry?.fields.map((field) => field.localName)).toEqual(
      expect.arrayContaining([
        'name',
        'type',
        'path',
        'size',
        'mode',
        'permissions',
        'modifiedTime',
        'symlinkTarget',
      ]),
    );
  });

  it('fails loudly, naming the bundle, when fewer than two descriptors are found', () => {
    const bundle = join(scratch, 'index.mjs');
    writeFileSync(bundle, 'export const x = fileDesc("ChRub3RoaW5n");\n');
    expect(() => loadEnvdDescriptors(bundle)).toThrow(
      /found 1 fileDesc\("…"\) call\(s\), expected at least 2/,
    );
    expect(() => loadEnvdDescriptors(bundle)).toThrow(bundle);
    expect(() => loadEnvdDescriptors(join(scratch, 'missing.mjs'))).toThrow(/Cannot read the e2b SDK bundle/);
  });
});
