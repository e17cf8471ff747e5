import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { Agent, protocol, run, user } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunItems, offloadRunItems, openAiAgentTools } from '../src/index.js';
import { PIXEL_BASE64, PIXEL_DATA_URL } from './helpers.js';

const PDF_BASE64 = Buffer.from('%PDF-1.4\n% a tiny document\n%%EOF\n').toString('base64');
const PDF_DATA_URL = `data:application/pdf;base64,${PDF_BASE64}`;

const base = mkdtempSync(join(tmpdir(), 'ws-openai-agents-offload-'));
const host = join(base, 'work');
const workspace = new LocalWorkspace({ hostWorkdir: host });
let workdir = '';

beforeAll(async () => {
  await workspace.initialize();
  workdir = workspace.getSandbox().workdir;
  writeFileSync(join(host, 'pixel.png'), Buffer.from(PIXEL_BASE64, 'base64'));
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** A run whose history holds an image and a PDF from the user and an image from a tool. */
async function runWithMedia() {
  const { tools } = await openAiAgentTools(workspace);
  const model = new ScriptedModel([
    [functionCall('Read', { file_path: posix.join(workdir, 'pixel.png') }, { callId: 'look' })],
    [assistantMessage('A single pixel, and a tiny PDF.')],
  ]);
  const input = [
    user([
      { type: 'input_text', text: 'What are these?' },
      { type: 'input_image', image: PIXEL_DATA_URL },
      { type: 'input_file', file: PDF_DATA_URL, filename: 'tiny.pdf' },
    ]),
  ];
  return run(new Agent({ name: 'viewer', tools, model }), input);
}

const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value));

describe('offloadRunItems / loadRunItems', () => {
  it("round-trips a run's history, with its media moved to data/ and restored", async () => {
    const result = await runWithMedia();
    const history = result.history;
    // The history really carries the media inline, as the SDK built it.
    expect(JSON.stringify(history).split(PIXEL_BASE64).length - 1).toBe(2);

    const path = await offloadRunItems(workspace, 'chat', history);
    expect(path).toBe(posix.join(workdir, 'sessions', 'chat', 'context.jsonl'));
    const stored = readFileSync(join(host, 'sessions', 'chat', 'context.jsonl'), 'utf8');
    expect(stored.trim().split('\n')).toHaveLength(history.length);
    expect(stored).not.toContain(PIXEL_BASE64);
    expect(stored).not.toContain(PDF_BASE64);
    expect(stored).toContain('"image":"workspace:///data/');
    // One file per payload: the pixel twice in the history, once on disk.
    const data = readdirSync(join(host, 'data'));
    expect(data.map((name) => posix.extname(name)).sort()).toEqual(['.pdf', '.png']);
    const bytes = (ext: string) => readFileSync(join(host, 'data', data.find((name) => name.endsWith(ext))!));
    expect(bytes('.png').toString('base64')).toBe(PIXEL_BASE64);
    expect(bytes('.pdf').toString('base64')).toBe(PDF_BASE64);

    const loaded = await loadRunItems(workspace, 'chat');
    expect(loaded).toEqual(plain(history));
    for (const item of loaded) expect(protocol.ModelItem.safeParse(item).success).toBe(true);

    // The restored items carry a conversation on: the model sees the images again.
    const model = new ScriptedModel([[assistantMessage('Still a pixel.')]]);
    const next = await run(new Agent({ name: 'viewer', model }), [...loaded, user('And now?')]);
    expect(next.finalOutput).toBe('Still a pixel.');
    const sent = JSON.stringify(model.firstCall?.request.input);
    expect(sent.split(PIXEL_DATA_URL).length - 1).toBe(2);
    expect(sent).toContain(PDF_DATA_URL);
  });

  it('appends batches, takes run items, and stores bytes as base64', async () => {
    const result = await runWithMedia();
    await offloadRunItems(workspace, 'items', result.newItems);
    expect(await loadRunItems(workspace, 'items')).toEqual(plain(result.output));

    // An item given with bytes, as the SDK's own schema reads it.
    const withBytes = protocol.FunctionCallResultItem.parse({
      type: 'function_call_result',
      name: 'snapshot',
      callId: 'snap',
      status: 'completed',
      output: { type: 'image', image: { data: Buffer.from(PIXEL_BASE64, 'base64'), mediaType: 'image/png' } },
    });
    expect((withBytes.output as { image: { data: unknown } }).image.data).toBeInstanceOf(Uint8Array);
    await offloadRunItems(workspace, 'items', [withBytes]);
    const stored = readFileSync(join(host, 'sessions', 'items', 'context.jsonl'), 'utf8');
    expect(stored).not.toContain(PIXEL_BASE64);
    const loaded = await loadRunItems(workspace, 'items');
    expect(loaded).toHaveLength(result.output.length + 1);
    expect(loaded.at(-1)).toEqual({
      ...withBytes,
      output: { type: 'image', image: { data: PIXEL_BASE64, mediaType: 'image/png' } },
    });
  });

  it('reads a session with no context as empty and refuses a hostile session id', async () => {
    expect(await loadRunItems(workspace, 'never-written')).toEqual([]);
    await expect(loadRunItems(workspace, '../escape')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(offloadRunItems(workspace, '../escape', [user('hi')])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
