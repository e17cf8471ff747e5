import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from '@langchain/core/messages';
import type { ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { langChainTools, loadMessages, offloadMessages } from '../src/index.js';

// A 1×1 PNG, and a few bytes standing for a WAV file.
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PNG = Buffer.from(PNG_BASE64, 'base64');
const AUDIO = new Uint8Array([82, 73, 70, 70, 1, 2, 3, 4, 87, 65, 86, 69]);
const JPEG_BASE64 = Buffer.from('not really a jpeg, but bytes all the same').toString('base64');

const base = mkdtempSync(join(tmpdir(), 'ws-langchain-offload-'));
const hostWorkdir = join(base, 'work');
const workspace = new LocalWorkspace({ hostWorkdir });

beforeAll(async () => {
  await workspace.initialize();
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** What is on disk in `data/`, by name. */
function dataFiles(): Map<string, Buffer> {
  const dir = join(hostWorkdir, 'data');
  return new Map(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name))]));
}

describe('offloadMessages / loadMessages', () => {
  it('round-trips a conversation with images, tool calls and a real tool result, keeping the bytes out of the context file', async () => {
    writeFileSync(join(hostWorkdir, 'chart.png'), PNG);
    const { tools } = await langChainTools(workspace);
    const read = tools.find((tool) => tool.name === 'Read')!;
    const toolCall = {
      id: 'call_read',
      name: 'Read',
      args: { file_path: join(workspace.workdir, 'chart.png') },
    };
    const toolMessage = (await read.invoke({ ...toolCall, type: 'tool_call' })) as ToolMessage;

    const messages: BaseMessage[] = [
      new SystemMessage('You are careful.'),
      new HumanMessage({
        id: 'human-1',
        content: [
          { type: 'text', text: 'What do these show?' },
          { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
          { type: 'audio', data: AUDIO, mimeType: 'audio/wav' },
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${JPEG_BASE64}`, detail: 'low' } },
          { type: 'image', source_type: 'base64', data: JPEG_BASE64, mime_type: 'image/jpeg' },
        ],
      }),
      new AIMessage({ content: 'Let me look at the chart.', tool_calls: [toolCall] }),
      toolMessage,
      new AIMessage('A single dot.'),
    ];
    const path = await offloadMessages(workspace, 'chat-1', messages);
    expect(path).toBe(join(workspace.workdir, 'sessions', 'chat-1', 'context.jsonl'));

    // One StoredMessage per line, no payload left inline.
    const text = readFileSync(join(hostWorkdir, 'sessions', 'chat-1', 'context.jsonl'), 'utf8');
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.map((line) => JSON.parse(line).type)).toEqual(['system', 'human', 'ai', 'tool', 'ai']);
    expect(text).not.toContain(PNG_BASE64);
    expect(text).not.toContain(JPEG_BASE64);
    expect(text).not.toContain(Buffer.from(AUDIO).toString('base64'));
    expect(text).toContain('workspace:///data/');
    // Stored once each, by content: the PNG of the message and of the tool result share a file.
    const files = dataFiles();
    const stored = [...files.values()];
    expect(stored.filter((bytes) => bytes.equals(PNG))).toHaveLength(1);
    expect(stored.some((bytes) => bytes.equals(Buffer.from(AUDIO)))).toBe(true);
    expect(stored.some((bytes) => bytes.equals(Buffer.from(JPEG_BASE64, 'base64')))).toBe(true);
    expect([...files.keys()].some((name) => name.endsWith('.png'))).toBe(true);

    const back = await loadMessages(workspace, 'chat-1');
    expect(back.map((message) => message.type)).toEqual(['system', 'human', 'ai', 'tool', 'ai']);
    const [system, human, ai, tool, last] = back;
    expect(system).toBeInstanceOf(SystemMessage);
    expect(system?.content).toBe('You are careful.');

    expect(human).toBeInstanceOf(HumanMessage);
    expect(human?.id).toBe('human-1');
    expect(human?.content).toEqual([
      { type: 'text', text: 'What do these show?' },
      { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
      // Uint8Array data comes back as base64.
      { type: 'audio', data: Buffer.from(AUDIO).toString('base64'), mimeType: 'audio/wav' },
      { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${JPEG_BASE64}`, detail: 'low' } },
      { type: 'image', source_type: 'base64', data: JPEG_BASE64, mime_type: 'image/jpeg' },
    ]);

    expect(AIMessage.isInstance(ai)).toBe(true);
    expect((ai as AIMessage).tool_calls).toEqual((messages[2] as AIMessage).tool_calls);
    expect((ai as AIMessage).tool_calls?.[0]).toMatchObject(toolCall);
    expect(ai?.content).toBe('Let me look at the chart.');

    expect(ToolMessage.isInstance(tool)).toBe(true);
    const restored = tool as ToolMessage;
    expect(restored.tool_call_id).toBe('call_read');
    expect(restored.name).toBe('Read');
    expect(restored.status).toBe('success');
    expect(restored.content).toEqual([{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }]);
    expect(restored.content).toEqual(toolMessage.content);
    expect(restored.artifact as ToolResult).toEqual(toolMessage.artifact);

    expect(last?.content).toBe('A single dot.');
  });

  it('appends later batches to the same session and reads them all back in order', async () => {
    await offloadMessages(workspace, 'chat-2', [new HumanMessage('first')]);
    await offloadMessages(workspace, 'chat-2', [new AIMessage('second'), new HumanMessage('third')]);
    const back = await loadMessages(workspace, 'chat-2');
    expect(back.map((message) => message.text)).toEqual(['first', 'second', 'third']);
  });

  it('keeps a data string that is not base64 inline and unchanged', async () => {
    const odd = new HumanMessage({
      content: [{ type: 'file', data: 'plain words, not base64', mimeType: 'text/plain' }],
    });
    await offloadMessages(workspace, 'chat-3', [odd]);
    const [back] = await loadMessages(workspace, 'chat-3');
    expect(back?.content).toEqual(odd.content);
  });

  it('reads a session with nothing offloaded as no messages', async () => {
    expect(await loadMessages(workspace, 'never-used')).toEqual([]);
  });

  it('refuses lines that are not LangChain messages, and hostile session ids', async () => {
    await workspace.offloadContext('foreign', [{ role: 'user', content: 'from another framework' }]);
    await expect(loadMessages(workspace, 'foreign')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(offloadMessages(workspace, '../escape', [new HumanMessage('x')])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      offloadMessages(workspace, 'chat-4', [{ role: 'user' } as unknown as BaseMessage]),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('rejects with ABORTED when the signal has fired', async () => {
    await expect(
      offloadMessages(workspace, 'chat-5', [new HumanMessage('x')], { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
  });
});
