import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

describe('offloadContext under a burst of appends', () => {
  const root = mkdtempSync(join(tmpdir(), 'ws-offload-group-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A workspace whose sandbox counts the append commands it runs. */
  const open = async (name: string) => {
    const workspace = await LocalWorkspace.open({ hostWorkdir: join(root, name), workspaceId: name });
    const sandbox = workspace.getSandbox();
    const exec = sandbox.exec.bind(sandbox);
    const counter = { appends: 0 };
    sandbox.exec = (argv, options) => {
      if (argv.some((arg) => arg.endsWith('context.jsonl'))) counter.appends++;
      return exec(argv, options);
    };
    return { workspace, counter };
  };
  const lines = (name: string) =>
    readFileSync(join(root, name, 'sessions', 's', 'context.jsonl'), 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { batch: number; line: number });

  it('appends the batches that gathered while a command ran in one command, each whole and in order', async () => {
    const { workspace, counter } = await open('burst');
    try {
      await Promise.all(
        Array.from({ length: 60 }, (_, batch) =>
          workspace.offloadContext(
            's',
            Array.from({ length: 3 }, (_, line) => ({ batch, line })),
          ),
        ),
      );
      const written = lines('burst');
      expect(written).toEqual(
        Array.from({ length: 60 }, (_, batch) => [0, 1, 2].map((line) => ({ batch, line }))).flat(),
      );
      // The first batch goes alone; the 59 that came while it ran go together.
      expect(counter.appends).toBeLessThanOrEqual(3);
      // A later append on its own is a command of its own.
      await workspace.offloadContext('s', [{ batch: 60, line: 0 }]);
      expect(counter.appends).toBeLessThanOrEqual(4);
      expect(lines('burst')).toHaveLength(181);
    } finally {
      await workspace.close();
    }
  });

  it('leaves out a queued batch whose signal was aborted before its turn, and appends the rest', async () => {
    const { workspace } = await open('aborted');
    try {
      const controller = new AbortController();
      const first = workspace.offloadContext('s', [{ batch: 0, line: 0 }]);
      const second = workspace.offloadContext('s', [{ batch: 1, line: 0 }], { signal: controller.signal });
      const third = workspace.offloadContext('s', [{ batch: 2, line: 0 }]);
      controller.abort();
      await first;
      const refused = await second.catch((error: unknown) => error);
      expect(isWsError(refused, 'ABORTED'), String(refused)).toBe(true);
      await third;
      expect(lines('aborted').map((item) => item.batch)).toEqual([0, 2]);
    } finally {
      await workspace.close();
    }
  });
});
