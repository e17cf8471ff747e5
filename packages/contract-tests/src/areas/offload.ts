import { createHash } from 'node:crypto';
import { type CompleteSandbox, resolveWorkspaceUrl } from '@ws/core';
import { expect } from 'vitest';
import { TINY_PNG } from '../fixtures.js';
import { conformanceCase, expectWsError, HOSTILE_IDS } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const PNG_BASE64 = TINY_PNG.toString('base64');
const PNG_NAME = `${createHash('sha256').update(PNG_BASE64).digest('hex')}.png`;

/** Offloading: data/, context.jsonl and tool results, their formats, atomicity and id checks. */
export function offloadArea(context: AreaContext): void {
  describe('offload', { decidedBy: 'engine' }, () => {
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;
    let workspaceId: string;

    beforeAll(async () => {
      workspaceId = context.newId();
      workspace = await context.create(workspaceId);
      await workspace.initialize();
      sandbox = workspace.getSandbox();
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
    }, context.caseTimeoutMs);

    conformanceCase(
      context,
      'offload.data',
      'stores base64 data once under data/<sha256><ext> and returns a workspace URL',
      async () => {
        const block = {
          type: 'data',
          id: 'b1',
          name: 'pixel.png',
          source: { type: 'base64', data: PNG_BASE64, media_type: 'image/png' },
        } as const;
        const first = await workspace.offloadData(block);
        expect(first).toEqual({
          type: 'data',
          id: 'b1',
          name: 'pixel.png',
          source: { type: 'url', url: `workspace:///data/${PNG_NAME}`, media_type: 'image/png' },
        });
        const second = await workspace.offloadData({ ...block, id: 'b2' });
        expect(second.source).toEqual(first.source);
        const path = resolveWorkspaceUrl((first.source as { url: string }).url, workspace.workdir);
        expect(path).toBe(`${workspace.workdir}/data/${PNG_NAME}`);
        expect(Buffer.from(await sandbox.readFile(path)).equals(TINY_PNG)).toBe(true);
        expect(
          (await sandbox.list(`${workspace.workdir}/data`)).filter((entry) =>
            entry.name.startsWith(PNG_NAME.slice(0, 64)),
          ),
        ).toHaveLength(1);
        const byUrl = {
          type: 'data',
          source: { type: 'url', url: 'https://example.com/x.png', media_type: 'image/png' },
        } as const;
        expect(await workspace.offloadData(byUrl)).toBe(byUrl);
        const text = await workspace.offloadData({
          type: 'data',
          source: { type: 'base64', data: Buffer.from('hello').toString('base64'), media_type: 'text/plain' },
        });
        expect((text.source as { url: string }).url).toMatch(/^workspace:\/\/\/data\/[0-9a-f]{64}\.txt$/);
        const unknown = await workspace.offloadData({
          type: 'data',
          source: { type: 'base64', data: 'AAAA', media_type: 'application/x-unknown' },
        });
        expect((unknown.source as { url: string }).url).toMatch(/\.bin$/);
        expect(() => resolveWorkspaceUrl('workspace:///../etc/passwd', workspace.workdir)).toThrow(
          expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
        );
      },
    );

    conformanceCase(
      context,
      'offload.context',
      'appends one JSON line per message and returns the same path each time',
      async () => {
        const messages = [
          { id: 'm1', role: 'user', content: [{ type: 'text', text: 'hello\nworld' }], metadata: {} },
          { id: 'm2', role: 'assistant', content: 'plain "quoted" ünï', metadata: { tokens: 3 } },
        ];
        const path = await workspace.offloadContext('session-1', messages);
        expect(path).toBe(`${workspace.workdir}/sessions/session-1/context.jsonl`);
        expect(await workspace.offloadContext('session-1', messages.slice().reverse())).toBe(path);
        const lines = decode(await sandbox.readFile(path)).split('\n');
        expect(lines.pop()).toBe('');
        expect(lines.map((line) => JSON.parse(line))).toEqual([
          messages[0],
          messages[1],
          messages[1],
          messages[0],
        ]);
        expect(lines[0]).toBe(JSON.stringify(messages[0]));
      },
    );

    conformanceCase(
      context,
      'offload.context-media',
      'moves base64 media of the common message shapes to data/',
      async () => {
        const dataUrl = `data:image/png;base64,${PNG_BASE64}`;
        const url = `workspace:///data/${PNG_NAME}`;
        const message = {
          role: 'user',
          content: [
            {
              type: 'data',
              id: 'd',
              name: 'a.png',
              source: { type: 'base64', data: PNG_BASE64, media_type: 'image/png' },
            },
            { type: 'image', image: PNG_BASE64, mediaType: 'image/png' },
            { type: 'file', data: dataUrl, mediaType: 'image/png', filename: 'f.png' },
            { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
            { type: 'image_url', image_url: { url: dataUrl, detail: 'low' } },
            { type: 'input_image', image_url: dataUrl },
            { type: 'image-data', data: PNG_BASE64, mediaType: 'image/png' },
            { type: 'input_image', image: dataUrl, detail: 'auto' },
            { type: 'text', text: PNG_BASE64 },
            { type: 'image', image: 'https://example.com/remote.png' },
          ],
          metadata: {
            nested: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
            ],
          },
        };
        const path = await workspace.offloadContext('media', [message]);
        const stored = JSON.parse(decode(await sandbox.readFile(path)).trim());
        expect(stored.content).toEqual([
          { type: 'data', id: 'd', name: 'a.png', source: { type: 'url', url, media_type: 'image/png' } },
          { type: 'image', image: url, mediaType: 'image/png' },
          { type: 'file', data: url, mediaType: 'image/png', filename: 'f.png' },
          { type: 'resource_link', uri: url, name: PNG_NAME, mimeType: 'image/png' },
          { type: 'image', source: { type: 'url', url } },
          { type: 'image_url', image_url: { url, detail: 'low' } },
          { type: 'input_image', image_url: url },
          { type: 'image-data', data: url, mediaType: 'image/png' },
          { type: 'input_image', image: url, detail: 'auto' },
          { type: 'text', text: PNG_BASE64 },
          { type: 'image', image: 'https://example.com/remote.png' },
        ]);
        expect(stored.metadata.nested[0].source).toEqual({ type: 'url', url });
        expect(
          Buffer.from(await sandbox.readFile(`${workspace.workdir}/data/${PNG_NAME}`)).equals(TINY_PNG),
        ).toBe(true);
      },
    );

    conformanceCase(
      context,
      'offload.context-concurrent',
      '100 concurrent appends from two workspace objects keep every batch whole',
      async (test) => {
        const other = await context.create(workspaceId);
        await other.initialize();
        try {
          const probe = `${workspace.workdir}/sessions/shared-probe.txt`;
          await sandbox.writeFile(probe, 'shared');
          if (!(await other.getSandbox().exists(probe)))
            test.skip('two workspace objects on one id do not share files on this target');
          const batch = (writer: string, index: number) =>
            Array.from({ length: 3 }, (_, line) => ({
              writer,
              index,
              line,
              padding: 'x'.repeat(200 + ((index * 37) % 500)),
            }));
          const path = `${workspace.workdir}/sessions/concurrent/context.jsonl`;
          await Promise.all(
            Array.from({ length: 100 }, (_, index) =>
              (index % 2 === 0 ? workspace : other).offloadContext(
                'concurrent',
                batch(index % 2 === 0 ? 'a' : 'b', index),
              ),
            ),
          );
          const lines = decode(await sandbox.readFile(path))
            .trimEnd()
            .split('\n');
          expect(lines).toHaveLength(300);
          const parsed = lines.map(
            (line) => JSON.parse(line) as { writer: string; index: number; line: number },
          );
          for (let start = 0; start < parsed.length; start += 3) {
            const group = parsed.slice(start, start + 3);
            expect(group.map((item) => item.line)).toEqual([0, 1, 2]);
            expect(new Set(group.map((item) => item.index)).size).toBe(1);
          }
          expect(new Set(parsed.map((item) => item.index)).size).toBe(100);
          const leftovers = (await sandbox.list(`${workspace.workdir}/sessions/concurrent`)).map(
            (entry) => entry.name,
          );
          expect(leftovers).toEqual(['context.jsonl']);
        } finally {
          await other.close();
        }
      },
      180_000,
    );

    conformanceCase(
      context,
      'offload.tool-result',
      'writes tool results as text with media placeholders and numbered names on clash',
      async () => {
        const first = await workspace.offloadToolResult('tools', { id: 'call_1', output: 'x'.repeat(5_000) });
        expect(first).toBe(`${workspace.workdir}/sessions/tools/tool_result-call_1.txt`);
        expect(decode(await sandbox.readFile(first))).toBe('x'.repeat(5_000));
        const second = await workspace.offloadToolResult('tools', { id: 'call_1', output: 'again' });
        expect(second).toBe(`${workspace.workdir}/sessions/tools/tool_result-call_1(1).txt`);
        const third = await workspace.offloadToolResult('tools', { id: 'call_1', output: 'third' });
        expect(third).toBe(`${workspace.workdir}/sessions/tools/tool_result-call_1(2).txt`);
        const blocks = await workspace.offloadToolResult('tools', {
          id: 'call_2',
          output: [
            { type: 'text', text: '0'.repeat(10) },
            {
              type: 'data',
              name: 'img.png',
              source: { type: 'base64', data: PNG_BASE64, media_type: 'image/png' },
            },
            { type: 'text', text: 'tail' },
            {
              type: 'data',
              name: 'remote.txt',
              source: { type: 'url', url: 'https://example.com/r.txt', media_type: 'text/plain' },
            },
            { type: 'thinking', thinking: 'dropped' },
          ],
        });
        expect(decode(await sandbox.readFile(blocks))).toBe(
          `${'0'.repeat(10)}<data url='workspace:///data/${PNG_NAME}' name='img.png' media_type='image/png'/>tail<data url='https://example.com/r.txt' name='remote.txt' media_type='text/plain'/>`,
        );
      },
    );

    conformanceCase(
      context,
      'offload.hostile-ids',
      'refuses session and tool-result ids that would leave sessions/',
      async () => {
        for (const id of HOSTILE_IDS) {
          await expectWsError(() => workspace.offloadContext(id, [{ a: 1 }]), 'INVALID_ARGUMENT');
          await expectWsError(
            () => workspace.offloadToolResult(id, { id: 'ok', output: 'x' }),
            'INVALID_ARGUMENT',
          );
          await expectWsError(
            () => workspace.offloadToolResult('ok-session', { id, output: 'x' }),
            'INVALID_ARGUMENT',
          );
        }
        expect(await sandbox.exists(`${workspace.workdir}/x`)).toBe(false);
        expect(await sandbox.exists(`${workspace.workdir}/sessions/ok-session`)).toBe(false);
        const odd = await workspace.offloadContext('session with "quotes" & ünï', [{ ok: true }]);
        expect(decode(await sandbox.readFile(odd))).toBe('{"ok":true}\n');
      },
    );

    conformanceCase(
      context,
      'offload.reopen',
      're-opening the workspace finds what was offloaded',
      async (test) => {
        if (!workspace.capabilities.persistent)
          test.skip(`the ${workspace.capabilities.backend} workspace declares persistent: false`);
        const path = await workspace.offloadContext('kept', [{ n: 1 }]);
        const again = await context.create(workspaceId);
        try {
          await again.initialize();
          expect(decode(await again.getSandbox().readFile(path))).toBe('{"n":1}\n');
          expect(await again.offloadContext('kept', [{ n: 2 }])).toBe(path);
          expect(decode(await again.getSandbox().readFile(path))).toBe('{"n":1}\n{"n":2}\n');
        } finally {
          await again.close();
        }
      },
    );
  });
}
