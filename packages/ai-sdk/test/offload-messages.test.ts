import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveWorkspaceUrl } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { type FilePart, generateText, type ImagePart, type ModelMessage, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiSdkTools, loadModelMessages, offloadModelMessages } from '../src/index.js';
import { call, scriptedModel } from './scripted-model.js';

const base = mkdtempSync(join(tmpdir(), 'ws-ai-sdk-offload-'));
const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });
const workdir = () => workspace.getSandbox().workdir;
// A 1×1 PNG, and a JPEG-looking payload long enough to be told apart from text.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 60 }, (_, index) => index)]);
const PDF = new TextEncoder().encode('%PDF-1.4\n% a tiny document for the round trip\n%%EOF\n');

beforeAll(() => workspace.initialize());
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** The bytes of every `Uint8Array`/base64 media part, compared as hex; the rest as it is. */
function normalise(value: unknown): unknown {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer)
    return `bytes:${Buffer.from(value instanceof ArrayBuffer ? new Uint8Array(value) : value).toString('hex')}`;
  if (value instanceof URL) return `url:${value.href}`;
  if (Array.isArray(value)) return value.map(normalise);
  if (typeof value !== 'object' || value === null) return value;
  const node = value as Record<string, unknown>;
  const output: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(node)) {
    if (item === undefined) continue;
    const base64Part = ['image-data', 'file-data'].includes(String(node.type)) && key === 'data';
    output[key] = base64Part
      ? `bytes:${Buffer.from(String(item), 'base64').toString('hex')}`
      : normalise(item);
  }
  return output;
}

describe('offloadModelMessages / loadModelMessages', () => {
  it('round-trips a conversation the SDK built, tool-result images included, with the bytes moved to data/', async () => {
    writeFileSync(join(workdir(), 'dot.png'), PNG);
    const { tools, instructions } = await aiSdkTools(workspace);
    const image: ImagePart = { type: 'image', image: JPEG, mediaType: 'image/jpeg' };
    const file: FilePart = { type: 'file', data: PDF, mediaType: 'application/pdf', filename: 'brief.pdf' };
    const user: ModelMessage = {
      role: 'user',
      content: [{ type: 'text', text: 'Look at these.' }, image, file],
    };
    const model = scriptedModel([
      [call('look', 'Read', { file_path: join(workdir(), 'dot.png') })],
      [{ type: 'text', text: 'A dot.' }],
    ]);
    const result = await generateText({
      model,
      tools,
      system: instructions,
      messages: [user],
      stopWhen: stepCountIs(3),
    });
    const history: ModelMessage[] = [user, ...result.response.messages];
    // What the SDK built: the tool message carries the PNG as an image-data part.
    expect(JSON.stringify(result.response.messages)).toContain('"type":"image-data"');

    const path = await offloadModelMessages(workspace, 'chat-1', history);
    expect(path).toBe(join(workdir(), 'sessions', 'chat-1', 'context.jsonl'));
    const stored = readFileSync(path, 'utf8');
    expect(stored.trim().split('\n')).toHaveLength(history.length);
    // No payload stays inline; each lives once under data/, named by content.
    expect(stored).not.toContain(PNG.toString('base64'));
    expect(stored).not.toContain(Buffer.from(JPEG).toString('base64'));
    expect(stored).not.toContain(Buffer.from(PDF).toString('base64'));
    const urls = [...stored.matchAll(/workspace:\/\/\/data\/[0-9a-f]{64}\.(png|jpg|pdf)/g)].map(
      (match) => match[0],
    );
    expect(new Set(urls.map((url) => url.split('.').pop()))).toEqual(new Set(['png', 'jpg', 'pdf']));
    const png = urls.find((url) => url.endsWith('.png'))!;
    expect(readFileSync(resolveWorkspaceUrl(png, workdir()))).toEqual(PNG);
    expect(png).toContain(createHash('sha256').update(PNG.toString('base64')).digest('hex'));

    const restored = await loadModelMessages(workspace, 'chat-1');
    expect(normalise(restored)).toEqual(normalise(history));
    const restoredImage = (restored[0]!.content as ImagePart[])[1]!;
    expect(restoredImage.image).toBeInstanceOf(Uint8Array);

    // The restored history is a valid prompt: the next call sends the model the same bytes.
    const next = scriptedModel([[{ type: 'text', text: 'again' }]]);
    await generateText({
      model: next,
      tools,
      messages: [...restored, { role: 'user', content: 'And now?' }],
    });
    const prompt = next.doGenerateCalls[0]!.prompt;
    const sentFile = prompt[0]!.content as Array<{ type: string; data?: unknown; mediaType?: string }>;
    expect(Buffer.from(sentFile[1]!.data as Uint8Array)).toEqual(Buffer.from(JPEG));
    expect(sentFile[2]).toMatchObject({ mediaType: 'application/pdf', filename: 'brief.pdf' });
    expect(JSON.stringify(prompt)).toContain(PNG.toString('base64'));
  });

  it('appends batches, keeps URL objects as their text and fills in the type of untyped image bytes', async () => {
    const first: ModelMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'image', image: new URL('https://example.com/cat.png') },
          { type: 'image', image: PNG.buffer.slice(PNG.byteOffset, PNG.byteOffset + PNG.byteLength) },
        ],
      },
    ];
    const second: ModelMessage[] = [
      {
        role: 'assistant',
        content: [
          { type: 'file', data: `data:image/png;base64,${PNG.toString('base64')}`, mediaType: 'image/png' },
        ],
      },
    ];
    await offloadModelMessages(workspace, 'chat-2', first);
    await offloadModelMessages(workspace, 'chat-2', second);
    const restored = await loadModelMessages(workspace, 'chat-2');
    expect(restored).toHaveLength(2);
    const [link, bytes] = restored[0]!.content as ImagePart[];
    expect(link).toEqual({ type: 'image', image: 'https://example.com/cat.png' });
    expect(bytes).toMatchObject({ type: 'image', mediaType: 'image/png' });
    expect(Buffer.from(bytes!.image as Uint8Array)).toEqual(PNG);
    const data = (restored[1]!.content as FilePart[])[0]!.data;
    expect(Buffer.from(data as Uint8Array)).toEqual(PNG);
  });

  it('reads a session with nothing offloaded as empty, and fails with NOT_FOUND when a payload is gone', async () => {
    expect(await loadModelMessages(workspace, 'never-used')).toEqual([]);
    const unique = new Uint8Array([0x89, 0x50, 0x4e, 0x47, ...Array.from({ length: 40 }, () => 7)]);
    await offloadModelMessages(workspace, 'chat-3', [
      { role: 'user', content: [{ type: 'image', image: unique, mediaType: 'image/png' }] },
    ]);
    const stored = readFileSync(join(workdir(), 'sessions', 'chat-3', 'context.jsonl'), 'utf8');
    const url = /workspace:\/\/\/data\/[0-9a-f]+\.png/.exec(stored)![0];
    rmSync(resolveWorkspaceUrl(url, workdir()));
    await expect(loadModelMessages(workspace, 'chat-3')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(offloadModelMessages(workspace, '../escape', [])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const aborted = { signal: AbortSignal.abort() };
    await expect(offloadModelMessages(workspace, 'chat-4', [], aborted)).rejects.toMatchObject({
      code: 'ABORTED',
    });
    await expect(loadModelMessages(workspace, 'chat-1', aborted)).rejects.toMatchObject({ code: 'ABORTED' });
    expect(existsSync(join(workdir(), 'sessions', 'never-used', 'context.jsonl'))).toBe(false);
  });
});
