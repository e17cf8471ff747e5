import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  RemoveMessage,
  ToolMessage,
} from '@langchain/core/messages';
import type { DynamicStructuredTool } from '@langchain/core/tools';
import type { Tool, ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LangChainToolset, langChainTools, loadMessages, OFFLOAD_DEFAULTS } from '../src/index.js';

// 5 000 000 characters: numbered lines, so the head, the tail and the middle can be told apart.
const HUGE = Array.from(
  { length: 100_000 },
  (_, index) => `line ${String(index).padStart(6, '0')} ${'x'.repeat(37)}\n`,
).join('');

/** A workspace tool that prints a build log of 5 MB (MCP tools and Read are not cut at 30 000 characters as Bash is). */
const buildLog: Tool = {
  name: 'BuildLog',
  description: 'Prints the whole build log.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: true, concurrencySafe: true },
  call: async (): Promise<ToolResult> => ({ content: [{ type: 'text', text: HUGE }], isError: false }),
};

/** A local workspace whose agent also has {@link buildLog}. */
class LogWorkspace extends LocalWorkspace {
  override async listTools(options: Parameters<LocalWorkspace['listTools']>[0] = {}): Promise<Tool[]> {
    return [...(await super.listTools(options)), buildLog];
  }
}

const base = mkdtempSync(join(tmpdir(), 'ws-langchain-offload-option-'));
const workspace = new LogWorkspace({ hostWorkdir: join(base, 'work') });
const sessionDir = (sessionId: string) => join(workspace.workdir, 'sessions', sessionId);

beforeAll(() => workspace.initialize());
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

type Turn = { call?: { id: string; name: string; args: Record<string, unknown> }; text?: string };

/**
 * The loop `createAgent` runs (the real one is run in apps/examples): the middleware's
 * `beforeModel`, whose update the messages reducer applies, then the scripted model, then the tool
 * of each call. Returns the state's messages and what each model call was given.
 */
async function agentLoop(toolset: LangChainToolset, start: BaseMessage[], turns: Turn[]) {
  let messages = [...start];
  const sent: BaseMessage[][] = [];
  for (const turn of turns) {
    const update = await toolset.offloadMiddleware?.beforeModel({ messages });
    if (update) {
      const [first, ...rest] = update.messages;
      expect(RemoveMessage.isInstance(first) && first.id === '__remove_all__').toBe(true);
      messages = rest;
    }
    sent.push([...messages]);
    const call = turn.call;
    if (!call) {
      messages.push(new AIMessage(turn.text ?? ''));
      continue;
    }
    messages.push(new AIMessage({ content: '', tool_calls: [{ ...call, type: 'tool_call' }] }));
    const tool = toolset.tools.find((candidate) => candidate.name === call.name) as DynamicStructuredTool;
    messages.push((await tool.invoke({ ...call, type: 'tool_call' })) as ToolMessage);
  }
  return { messages, sent };
}

describe('langChainTools({ offload })', () => {
  it('offload-tool-result: a 5 MB result reaches the model as head, tail and path; the file holds all of it', async () => {
    const toolset = await langChainTools(workspace, { sessionId: 'huge', offload: true });
    const { messages } = await agentLoop(
      toolset,
      [new HumanMessage('build')],
      [{ call: { id: 'log-1', name: 'BuildLog', args: {} } }],
    );
    const message = messages.at(-1) as ToolMessage;
    const shown = message.content as string;
    const path = join(sessionDir('huge'), 'tool_result-log-1.txt');
    expect(shown.length).toBeLessThan(OFFLOAD_DEFAULTS.previewChars + 1000);
    expect(shown.startsWith('line 000000 ')).toBe(true);
    expect(shown).toContain('line 099999 ');
    expect(shown).not.toContain('line 050000 ');
    expect(shown).toContain(`The whole result is in '${path}'`);
    expect(shown).toContain('5000000 characters');
    expect(readFileSync(path, 'utf8')).toBe(HUGE);
    // The artifact stays small too (a checkpointer stores it): it says where the whole result is.
    expect((message.artifact as ToolResult).metadata).toMatchObject({
      offloaded: { path, chars: 5_000_000 },
    });
    expect(JSON.stringify(message.artifact).length).toBeLessThan(30_000);
  });

  it('offload-tool-result-bash: a Bash output over toolResultChars is offloaded whole, named by the call id', async () => {
    const toolset = await langChainTools(workspace, {
      sessionId: 'bash',
      offload: { toolResultChars: 5_000, previewChars: 400 },
    });
    const { messages } = await agentLoop(
      toolset,
      [new HumanMessage('count')],
      [{ call: { id: 'call_seq', name: 'Bash', args: { command: 'seq 1 4000' } } }],
    );
    const shown = (messages.at(-1) as ToolMessage).content as string;
    const path = join(sessionDir('bash'), 'tool_result-call_seq.txt');
    expect(readFileSync(path, 'utf8')).toBe(
      `${Array.from({ length: 4000 }, (_, index) => index + 1).join('\n')}\n`,
    );
    expect(shown.startsWith('1\n2\n3\n')).toBe(true);
    expect(shown).toContain('3999\n4000');
    expect(shown).toContain(path);
    expect(shown.length).toBeLessThan(1_000);
  });

  it('offload-context: a conversation past its budget is parked in context.jsonl and continues', async () => {
    const toolset = await langChainTools(workspace, {
      sessionId: 'long',
      offload: { contextBudgetChars: 12_000, contextKeepChars: 4_000 },
    });
    expect(toolset.offloadMiddleware?.name).toBe('WorkspaceOffloadMiddleware');
    const turns: Turn[] = Array.from({ length: 6 }, (_, index) => ({
      call: {
        id: `turn-${index}`,
        name: 'Bash',
        args: { command: `printf 'turn ${index} %.0s' $(seq 1 400)` },
      },
    }));
    const { messages, sent } = await agentLoop(
      toolset,
      [new HumanMessage('run six commands')],
      [...turns, { text: 'all done' }],
    );

    const path = join(sessionDir('long'), 'context.jsonl');
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'human', data: { content: 'run six commands' } });
    expect(new Set(lines).size).toBe(lines.length);
    // The state itself lost the parked messages: a note naming the file stands first.
    expect(messages[0]!.content).toContain(`is offloaded to '${path}'`);
    expect(messages.filter((message) => String(message.content).includes('is offloaded to'))).toHaveLength(1);
    expect(messages.some((message) => message.content === 'run six commands')).toBe(false);
    expect(ToolMessage.isInstance(messages[1])).toBe(false);
    for (const given of sent) expect(JSON.stringify(given.map((m) => m.content)).length).toBeLessThan(14_000);
    expect(JSON.stringify(sent.at(-1)!.map((m) => m.content))).toContain('turn 5');

    // What was parked reads back as LangChain messages, tool calls and results included.
    const parked = await loadMessages(workspace, 'long');
    expect(parked).toHaveLength(lines.length);
    expect(parked[0]!.content).toBe('run six commands');
    expect(parked.some((message) => ToolMessage.isInstance(message))).toBe(true);

    // And it continues: the next turn sees the note and the last turns.
    const next = await agentLoop(
      toolset,
      [...messages, new HumanMessage('and now?')],
      [{ text: 'continued' }],
    );
    expect(next.sent[0]![0]!.content).toContain(`is offloaded to '${path}'`);
    expect(readFileSync(path, 'utf8').trim().split('\n')).toEqual(lines);
  });

  it('offload-off: without the option nothing is offloaded and the model gets every result whole', async () => {
    const toolset = await langChainTools(workspace, { sessionId: 'off' });
    expect('offloadMiddleware' in toolset).toBe(false);
    const { messages } = await agentLoop(
      toolset,
      [new HumanMessage('build')],
      [{ call: { id: 'log-2', name: 'BuildLog', args: {} } }],
    );
    expect((messages.at(-1) as ToolMessage).content).toBe(HUGE);
    expect(existsSync(sessionDir('off'))).toBe(false);
  });

  it('offload-invalid: sizes that cannot work are refused', async () => {
    await expect(langChainTools(workspace, { offload: { toolResultChars: 1.5 } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(langChainTools(workspace, { offload: { sessionId: '../up' } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
