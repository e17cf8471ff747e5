import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool, ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { generateText, type ModelMessage, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiSdkTools, loadModelMessages, OFFLOAD_DEFAULTS } from '../src/index.js';
import { type CallOptions, call, scriptedModel } from './scripted-model.js';

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

const base = mkdtempSync(join(tmpdir(), 'ws-ai-sdk-offload-'));
const workspace = new LogWorkspace({ hostWorkdir: join(base, 'work') });

beforeAll(() => workspace.initialize());
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** The tool-result outputs of a prompt, by call id. */
function outputs(prompt: CallOptions['prompt']): Record<string, { type: string; value: unknown }> {
  const found: Record<string, { type: string; value: unknown }> = {};
  for (const message of prompt)
    if (message.role === 'tool')
      for (const part of message.content)
        if (part.type === 'tool-result')
          found[part.toolCallId] = part.output as { type: string; value: string };
  return found;
}

const sessionDir = (sessionId: string) => join(workspace.workdir, 'sessions', sessionId);

describe('aiSdkTools({ offload })', () => {
  it('offload-tool-result: a 5 MB result reaches the model as head, tail and path; the file holds all of it', async () => {
    const { tools, instructions } = await aiSdkTools(workspace, { sessionId: 'huge', offload: true });
    const model = scriptedModel([[call('log-1', 'BuildLog', {})], [{ type: 'text', text: 'read it' }]]);
    const result = await generateText({
      model,
      tools,
      system: instructions,
      prompt: 'build',
      stopWhen: stepCountIs(3),
    });

    const seen = outputs(model.doGenerateCalls[1]!.prompt)['log-1']!;
    const shown = seen.value as string;
    expect(seen.type).toBe('text');
    const path = join(sessionDir('huge'), 'tool_result-log-1.txt');
    expect(shown.length).toBeLessThan(OFFLOAD_DEFAULTS.previewChars + 1000);
    expect(shown.startsWith('line 000000 ')).toBe(true);
    expect(shown).toContain('line 099999 ');
    expect(shown).not.toContain('line 050000 ');
    expect(shown).toContain(`The whole result is in '${path}'`);
    expect(shown).toContain('5000000 characters');
    // The file holds the whole output, byte for byte.
    expect(readFileSync(path, 'utf8')).toBe(HUGE);
    // The program still gets the whole result; the SDK's history holds what the model saw.
    const recorded = result.steps[0]!.toolResults[0]!.output as ToolResult;
    expect((recorded.content[0] as { text: string }).text).toHaveLength(5_000_000);
    const toolMessage = result.response.messages.find((message) => message.role === 'tool');
    expect(JSON.stringify(toolMessage).length).toBeLessThan(30_000);
  });

  it('offload-tool-result-bash: a Bash output over toolResultChars is offloaded whole, named by the call id', async () => {
    const { tools } = await aiSdkTools(workspace, {
      sessionId: 'bash',
      offload: { toolResultChars: 5_000, previewChars: 400 },
    });
    const model = scriptedModel([
      [call('call_seq', 'Bash', { command: 'seq 1 4000' })],
      [{ type: 'text', text: 'ok' }],
    ]);
    await generateText({ model, tools, prompt: 'count', stopWhen: stepCountIs(3) });
    const shown = outputs(model.doGenerateCalls[1]!.prompt).call_seq!.value as string;
    const expected = `${Array.from({ length: 4000 }, (_, index) => index + 1).join('\n')}\n`;
    const path = join(sessionDir('bash'), 'tool_result-call_seq.txt');
    expect(readFileSync(path, 'utf8')).toBe(expected);
    expect(shown.startsWith('1\n2\n3\n')).toBe(true);
    expect(shown).toContain('3999\n4000');
    expect(shown).toContain(path);
    expect(shown.length).toBeLessThan(1_000);
  });

  it('offload-context: a conversation past its budget is parked in context.jsonl and continues', async () => {
    const { tools, prepareStep } = await aiSdkTools(workspace, {
      sessionId: 'long',
      offload: { contextBudgetChars: 12_000, contextKeepChars: 4_000 },
    });
    expect(prepareStep).toBeTypeOf('function');
    // Six turns of about 3 000 characters each, then an answer.
    const turns = Array.from({ length: 6 }, (_, index) => [
      call(`turn-${index}`, 'Bash', { command: `printf 'turn ${index} %.0s' $(seq 1 400)` }),
    ]);
    const model = scriptedModel([...turns, [{ type: 'text', text: 'all done' }]]);
    const messages: ModelMessage[] = [{ role: 'user', content: 'run six commands' }];
    const result = await generateText({ model, tools, messages, prepareStep, stopWhen: stepCountIs(10) });
    expect(result.text).toBe('all done');

    const path = join(sessionDir('long'), 'context.jsonl');
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(JSON.parse(lines[0]!)).toEqual({ role: 'user', content: 'run six commands' });
    // Each call stayed within the budget and, once parked, began with the note naming the file.
    for (const callOptions of model.doGenerateCalls)
      expect(JSON.stringify(callOptions.prompt).length).toBeLessThan(12_000 + 2_000);
    const last = model.doGenerateCalls.at(-1)!.prompt;
    const note = last.find((message) => message.role === 'user');
    expect(JSON.stringify(note)).toContain(`is offloaded to '${path}'`);
    expect(JSON.stringify(last)).not.toContain('run six commands');
    expect(JSON.stringify(last)).toContain('turn 5');

    // Each message was offloaded once: what was parked reads back, the first turns first.
    const parked = await loadModelMessages(workspace, 'long');
    expect(parked).toHaveLength(lines.length);
    expect(new Set(lines).size).toBe(lines.length);
    expect(JSON.stringify(parked)).toContain('turn 0');

    // The conversation continues: a new call with the whole history puts the same note in place and
    // does not offload the parked messages again.
    const next = scriptedModel([[{ type: 'text', text: 'continued' }]]);
    const more = await generateText({
      model: next,
      tools,
      messages: [...messages, ...result.response.messages, { role: 'user', content: 'and now?' }],
      prepareStep,
    });
    expect(more.text).toBe('continued');
    const again = readFileSync(path, 'utf8').trim().split('\n');
    expect(again.slice(0, lines.length)).toEqual(lines);
    expect(JSON.stringify(next.doGenerateCalls[0]!.prompt)).toContain(`is offloaded to '${path}'`);
    expect(JSON.stringify(next.doGenerateCalls[0]!.prompt)).not.toContain('run six commands');
  });

  it('offload-off: without the option nothing is offloaded and the model gets every result whole', async () => {
    const toolset = await aiSdkTools(workspace, { sessionId: 'off' });
    expect('prepareStep' in toolset).toBe(false);
    const model = scriptedModel([[call('log-2', 'BuildLog', {})], [{ type: 'text', text: 'ok' }]]);
    await generateText({ model, tools: toolset.tools, prompt: 'build', stopWhen: stepCountIs(3) });
    expect(outputs(model.doGenerateCalls[1]!.prompt)['log-2']).toEqual({ type: 'text', value: HUGE });
    expect(existsSync(sessionDir('off'))).toBe(false);
    const same = await aiSdkTools(workspace, { sessionId: 'off', offload: false });
    expect('prepareStep' in same).toBe(false);
  });

  it('offload-invalid: sizes that cannot work are refused', async () => {
    await expect(aiSdkTools(workspace, { offload: { toolResultChars: 0 } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      aiSdkTools(workspace, { offload: { toolResultChars: 100, previewChars: 100 } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(
      aiSdkTools(workspace, { offload: { contextBudgetChars: 100, contextKeepChars: 200 } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
