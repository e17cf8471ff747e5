import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentInputItem, run, user } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import type { Tool, ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunItems, OFFLOAD_DEFAULTS, openAiAgentTools } from '../src/index.js';
import { customDataOf, outputsByCall, outputText } from './helpers.js';

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

const base = mkdtempSync(join(tmpdir(), 'ws-openai-agents-offload-option-'));
const workspace = new LogWorkspace({ hostWorkdir: join(base, 'work') });
const sessionDir = (sessionId: string) => join(workspace.workdir, 'sessions', sessionId);

beforeAll(() => workspace.initialize());
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** The input items of one recorded model call. */
const inputOf = (model: ScriptedModel, index: number): AgentInputItem[] => {
  const input = model.calls[index]?.request.input;
  return typeof input === 'string' ? [user(input)] : [...(input ?? [])];
};

describe('openAiAgentTools({ offload })', () => {
  it('offload-tool-result: a 5 MB result reaches the model as head, tail and path; the file holds all of it', async () => {
    const { tools, instructions } = await openAiAgentTools(workspace, { sessionId: 'huge', offload: true });
    const model = new ScriptedModel([
      [functionCall('BuildLog', {}, { callId: 'log-1' })],
      [assistantMessage('read it')],
    ]);
    const result = await run(new Agent({ name: 'builder', instructions, tools, model }), 'build');

    const shown = outputText(outputsByCall(inputOf(model, 1)).get('log-1'));
    const path = join(sessionDir('huge'), 'tool_result-log-1.txt');
    expect(shown.length).toBeLessThan(OFFLOAD_DEFAULTS.previewChars + 1000);
    expect(shown.startsWith('line 000000 ')).toBe(true);
    expect(shown).toContain('line 099999 ');
    expect(shown).not.toContain('line 050000 ');
    expect(shown).toContain(`The whole result is in '${path}'`);
    expect(shown).toContain('5000000 characters');
    expect(readFileSync(path, 'utf8')).toBe(HUGE);
    // The custom data says where the whole result went; the run's history holds the preview only.
    expect(customDataOf(result.newItems, 'log-1')?.metadata).toMatchObject({
      offloaded: { path, chars: 5_000_000 },
    });
    expect(JSON.stringify(result.history).length).toBeLessThan(30_000);
  });

  it('offload-tool-result-bash: a Bash output over toolResultChars is offloaded whole, named by the call id', async () => {
    const { tools } = await openAiAgentTools(workspace, {
      sessionId: 'bash',
      offload: { toolResultChars: 5_000, previewChars: 400 },
    });
    const model = new ScriptedModel([
      [functionCall('Bash', { command: 'seq 1 4000' }, { callId: 'call_seq' })],
      [assistantMessage('ok')],
    ]);
    await run(new Agent({ name: 'counter', tools, model }), 'count');
    const shown = outputText(outputsByCall(inputOf(model, 1)).get('call_seq'));
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
    const { tools, callModelInputFilter } = await openAiAgentTools(workspace, {
      sessionId: 'long',
      offload: { contextBudgetChars: 12_000, contextKeepChars: 4_000 },
    });
    expect(callModelInputFilter).toBeTypeOf('function');
    const model = new ScriptedModel([
      ...Array.from({ length: 6 }, (_, index) => [
        functionCall(
          'Bash',
          { command: `printf 'turn ${index} %.0s' $(seq 1 400)` },
          { callId: `turn-${index}` },
        ),
      ]),
      [assistantMessage('all done')],
    ]);
    const agent = new Agent({ name: 'runner', tools, model });
    const result = await run(agent, 'run six commands', { callModelInputFilter, maxTurns: 10 });
    expect(result.finalOutput).toBe('all done');

    const path = join(sessionDir('long'), 'context.jsonl');
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ role: 'user', content: 'run six commands' });
    for (const call of model.calls) expect(JSON.stringify(call.request.input).length).toBeLessThan(14_000);
    const last = inputOf(model, model.calls.length - 1);
    expect(JSON.stringify(last[0])).toContain(`is offloaded to '${path}'`);
    expect(JSON.stringify(last)).not.toContain('run six commands');
    expect(JSON.stringify(last)).toContain('turn 5');
    // No call's result went without its call.
    const first = last[1] as { type?: string };
    expect(first.type).not.toBe('function_call_result');

    // Each item was offloaded once; what was parked reads back as the SDK's items.
    expect(new Set(lines).size).toBe(lines.length);
    const parked = await loadRunItems(workspace, 'long');
    expect(parked).toHaveLength(lines.length);
    expect(JSON.stringify(parked)).toContain('turn 0');

    // The conversation continues from the whole history: the same note, nothing offloaded twice.
    model.enqueue([assistantMessage('continued')]);
    const more = await run(agent, [...result.history, user('and now?')], { callModelInputFilter });
    expect(more.finalOutput).toBe('continued');
    expect(readFileSync(path, 'utf8').trim().split('\n').slice(0, lines.length)).toEqual(lines);
    const again = JSON.stringify(inputOf(model, model.calls.length - 1));
    expect(again).toContain(`is offloaded to '${path}'`);
    expect(again).not.toContain('run six commands');
  });

  it('offload-off: without the option nothing is offloaded and the model gets every result whole', async () => {
    const toolset = await openAiAgentTools(workspace, { sessionId: 'off' });
    expect('callModelInputFilter' in toolset).toBe(false);
    const model = new ScriptedModel([
      [functionCall('BuildLog', {}, { callId: 'log-2' })],
      [assistantMessage('ok')],
    ]);
    await run(new Agent({ name: 'builder', tools: toolset.tools, model }), 'build');
    expect(outputText(outputsByCall(inputOf(model, 1)).get('log-2'))).toBe(HUGE);
    expect(existsSync(sessionDir('off'))).toBe(false);
  });

  it('offload-invalid: sizes that cannot work are refused', async () => {
    await expect(openAiAgentTools(workspace, { offload: { previewChars: -1 } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      openAiAgentTools(workspace, { offload: { contextBudgetChars: 100, contextKeepChars: 100 } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
