import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stdioSpec, uploadMcpFixtures } from '@ws/contract-tests';
import { SKILL_TOOL_NAME, type Tool, type ToolResult, workspaceToolset } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { generateText, type ModelMessage, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiSdkTools, isDestructive, toAiSdkTool, toAiSdkToolOutput } from '../src/index.js';
import { type CallOptions, call, scriptedModel } from './scripted-model.js';

const base = mkdtempSync(join(tmpdir(), 'ws-ai-sdk-'));
const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });
const workdir = () => workspace.getSandbox().workdir;
// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

beforeAll(async () => {
  await workspace.initialize();
  await uploadMcpFixtures(workspace.getSandbox(), workdir());
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

/** The tool-result parts of the prompt the model was given, by tool call id. */
function toolOutputs(prompt: CallOptions['prompt']): Record<string, unknown> {
  const outputs: Record<string, unknown> = {};
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content)
      if (part.type === 'tool-result') outputs[part.toolCallId] = part.output;
  }
  return outputs;
}

describe('aiSdkTools', () => {
  it('makes the built-ins, the scope’s MCP tools and Skill into dynamic tools whose schemas reach the model as they are', async () => {
    const skillDir = join(base, 'greeting');
    mkdirSync(skillDir, { recursive: true });
    writeFileSync(
      join(skillDir, 'SKILL.md'),
      '---\nname: greeting\ndescription: Says hello.\n---\nSay hello.\n',
    );
    await workspace.addSkill(skillDir, { agentId: 'mapper' });
    await workspace.addMcp(stdioSpec('helper'), { agentId: 'mapper', sessionId: 's1' });

    const { tools, instructions, skills } = await aiSdkTools(workspace, {
      agentId: 'mapper',
      sessionId: 's1',
    });
    const core = await workspaceToolset(workspace, { agentId: 'mapper', sessionId: 's1' });
    expect(Object.keys(tools)).toEqual(core.tools.map((tool) => tool.name));
    expect(Object.keys(tools)).toEqual(
      expect.arrayContaining(['Bash', 'Read', 'mcp__helper__echo', SKILL_TOOL_NAME]),
    );
    expect(instructions).toBe(core.instructions);
    expect(instructions).toContain('- greeting: Says hello.');
    expect(skills.map((skill) => skill.name)).toEqual(['greeting']);
    for (const tool of Object.values(tools)) {
      expect(tool.type).toBe('dynamic');
      expect(tool.needsApproval).toBeUndefined();
      expect('strict' in tool).toBe(false);
    }

    const model = scriptedModel([
      [
        call('echo-1', 'mcp__helper__echo', { text: 'through the SDK' }),
        call('skill-1', 'Skill', { name: 'greeting' }),
      ],
      [{ type: 'text', text: 'done' }],
    ]);
    const result = await generateText({
      model,
      tools,
      system: instructions,
      prompt: 'go',
      stopWhen: stepCountIs(4),
    });
    const sent = model.doGenerateCalls[0]!.tools!;
    for (const tool of core.tools) {
      const declared = sent.find((candidate) => candidate.name === tool.name);
      expect(declared).toMatchObject({
        type: 'function',
        description: tool.description,
        inputSchema: tool.inputSchema,
      });
      expect(declared).not.toHaveProperty('strict');
    }
    const outputs = toolOutputs(model.doGenerateCalls[1]!.prompt);
    expect(outputs['echo-1']).toMatchObject({
      type: 'text',
      value: expect.stringContaining('through the SDK'),
    });
    expect(outputs['skill-1']).toMatchObject({ type: 'text', value: expect.stringContaining('Say hello.') });
    expect(result.text).toBe('done');
  });

  it('sends the model text, images as image parts and failures as error-text, and records the ToolResult for the program', async () => {
    writeFileSync(join(workdir(), 'dot.png'), PNG);
    const { tools } = await aiSdkTools(workspace);
    const model = scriptedModel([
      [
        call('w', 'Write', { file_path: join(workdir(), 'note.txt'), content: 'one\n' }),
        call('img', 'Read', { file_path: join(workdir(), 'dot.png') }),
        call('missing', 'Read', { file_path: join(workdir(), 'nope.txt') }),
        call('fail', 'Bash', { command: 'echo broken >&2; exit 3' }),
      ],
      [{ type: 'text', text: 'seen' }],
    ]);
    const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(3) });

    const outputs = toolOutputs(model.doGenerateCalls[1]!.prompt);
    expect(outputs.w).toMatchObject({ type: 'text' });
    expect(outputs.img).toEqual({
      type: 'content',
      value: [{ type: 'image-data', data: PNG.toString('base64'), mediaType: 'image/png' }],
    });
    expect(outputs.missing).toMatchObject({ type: 'error-text', value: expect.stringMatching(/nope\.txt/) });
    expect(outputs.fail).toMatchObject({ type: 'error-text', value: expect.stringContaining('broken') });
    // No tool result reaches the model as the JSON of a ToolResult.
    expect(JSON.stringify(outputs)).not.toContain('isError');

    const recorded = Object.fromEntries(
      result.steps[0]!.toolResults.map((part) => [part.toolCallId, part.output as ToolResult]),
    );
    expect(recorded.w?.isError).toBe(false);
    expect(recorded.w?.metadata).toHaveProperty('diff');
    expect(recorded.fail).toMatchObject({ isError: true, metadata: { exitCode: 3 } });
    expect(readFileSync(join(workdir(), 'note.txt'), 'utf8')).toBe('one\n');
    // The tool message the SDK keeps for the next turn carries the same model output.
    const toolMessage = result.response.messages.find((message) => message.role === 'tool');
    expect(JSON.stringify(toolMessage)).toContain('"type":"error-text"');
  });

  it('carries the step’s abort signal into the call: aborting kills the running command', async () => {
    const { tools } = await aiSdkTools(workspace);
    const pidFile = join(workdir(), 'sleeper.pid');
    const model = scriptedModel([[call('s', 'Bash', { command: `echo $$ > ${pidFile}; exec sleep 30` })]]);
    const controller = new AbortController();
    const started = Date.now();
    const run = generateText({ model, tools, prompt: 'go', abortSignal: controller.signal });
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') {
      if (Date.now() - started > 10_000) throw new Error('the command never started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    controller.abort();
    // The SDK keeps the call's failure as a tool-error part: the WsError ABORTED the call threw.
    const result = await run;
    expect(result.content.find((part) => part.type === 'tool-error')).toMatchObject({
      toolCallId: 's',
      error: { code: 'ABORTED' },
    });
    expect(Date.now() - started).toBeLessThan(20_000);
    let alive = true;
    for (let waited = 0; alive && waited < 5_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
    }
    expect(alive).toBe(false);

    // The same through the tool's execute, as any caller of the ToolSet would do it.
    const execute = tools.Bash!.execute!;
    await expect(
      execute({ command: 'sleep 30' }, { toolCallId: 'x', messages: [], abortSignal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it("marks destructive tools for approval and runs one only once it is approved, through the SDK's approval flow", async () => {
    const { tools } = await aiSdkTools(workspace, { approve: 'destructive' });
    expect(
      Object.entries(tools)
        .filter(([, tool]) => tool.needsApproval === true)
        .map(([name]) => name)
        .sort(),
    ).toEqual(['Bash', 'Edit', 'Write']);
    expect(tools.Read!.needsApproval).toBeUndefined();

    const target = join(workdir(), 'approved.txt');
    const model = scriptedModel([
      [call('write-1', 'Write', { file_path: target, content: 'approved\n' })],
      [{ type: 'text', text: 'written' }],
    ]);
    const prompt: ModelMessage[] = [{ role: 'user', content: 'write it' }];
    const first = await generateText({ model, tools, messages: prompt, stopWhen: stepCountIs(3) });
    const request = first.content.find((part) => part.type === 'tool-approval-request');
    expect(request).toMatchObject({ toolCall: { toolName: 'Write', toolCallId: 'write-1' } });
    expect(existsSync(target)).toBe(false);
    expect(model.doGenerateCalls).toHaveLength(1);

    const second = await generateText({
      model,
      tools,
      stopWhen: stepCountIs(3),
      messages: [
        ...prompt,
        ...first.response.messages,
        {
          role: 'tool',
          content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }],
        },
      ],
    });
    expect(readFileSync(target, 'utf8')).toBe('approved\n');
    expect(second.text).toBe('written');

    const all = await aiSdkTools(workspace, { approve: 'all' });
    expect(Object.values(all.tools).every((tool) => tool.needsApproval === true)).toBe(true);
    const custom = await aiSdkTools(workspace, { approve: (tool) => tool.name === 'Grep' });
    expect(Object.keys(custom.tools).filter((name) => custom.tools[name]!.needsApproval)).toEqual(['Grep']);
  });

  it('asks for strict mode with a strict-ready schema and drops the nulls of left-out properties', async () => {
    writeFileSync(join(workdir(), 'lines.txt'), 'a\nb\nc\n');
    const { tools } = await aiSdkTools(workspace, { strict: true });
    const model = scriptedModel([
      [
        call('r', 'Read', {
          file_path: join(workdir(), 'lines.txt'),
          offset: null,
          limit: null,
          pages: null,
        }),
        call('r2', 'Read', { file_path: join(workdir(), 'lines.txt'), offset: 2, limit: 1, pages: null }),
      ],
      [{ type: 'text', text: 'ok' }],
    ]);
    await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(3) });
    const read = model.doGenerateCalls[0]!.tools!.find((tool) => tool.name === 'Read');
    expect(read).toMatchObject({ strict: true });
    const schema = (read as unknown as { inputSchema: Record<string, unknown> }).inputSchema;
    expect(schema.required).toEqual(['file_path', 'offset', 'limit', 'pages']);
    expect(schema.additionalProperties).toBe(false);
    expect(JSON.stringify(schema)).not.toContain('"default"');
    expect((schema.properties as Record<string, { type: unknown }>).offset?.type).toEqual([
      'integer',
      'null',
    ]);

    const outputs = toolOutputs(model.doGenerateCalls[1]!.prompt) as Record<
      string,
      { type: string; value: string }
    >;
    expect(outputs.r).toMatchObject({ type: 'text' });
    expect(outputs.r!.value).toContain('a');
    expect(outputs.r!.value).toContain('c');
    expect(outputs.r2!.value).toContain('b');
    expect(outputs.r2!.value).not.toContain('c');
  });

  it('hands a strict tool its input without the nulls strict mode added, keeping the nulls its schema allows', async () => {
    const inputs: unknown[] = [];
    const recorder: Tool = {
      name: 'recorder',
      description: 'records its input',
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          note: { type: 'string' },
          parent: { type: ['string', 'null'] },
          options: { type: 'object', properties: { depth: { type: 'integer' } } },
        },
        required: ['name'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true, concurrencySafe: true },
      call: async (input) => {
        inputs.push(input);
        return { content: [{ type: 'text', text: 'ok' }], isError: false };
      },
    };
    const strict = toAiSdkTool(recorder, { strict: true });
    expect(strict.strict).toBe(true);
    await strict.execute!(
      { name: 'a', note: null, parent: null, options: { depth: null } },
      { toolCallId: 'r', messages: [] },
    );
    expect(inputs).toEqual([{ name: 'a', parent: null, options: {} }]);
  });

  it('leaves a tool non-strict when its schema cannot be made strict', () => {
    const open: Tool = {
      name: 'open',
      description: 'takes anything',
      inputSchema: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
      annotations: { readOnlyHint: true, concurrencySafe: true },
      call: async () => ({ content: [], isError: false }),
    };
    expect(toAiSdkTool(open, { strict: true }).strict).toBe(false);
    expect(toAiSdkTool(open).strict).toBeUndefined();
    expect(isDestructive({ ...open, annotations: { readOnlyHint: false, concurrencySafe: false } })).toBe(
      true,
    );
    expect(
      isDestructive({
        ...open,
        annotations: { readOnlyHint: false, concurrencySafe: false, destructiveHint: false },
      }),
    ).toBe(false);
    expect(() => toAiSdkTool(open, { approve: 'sometimes' as never })).toThrow(/approval policy/);
  });
});

describe('toAiSdkToolOutput', () => {
  it('maps every MCP content kind onto a model output part', () => {
    expect(
      toAiSdkToolOutput({
        isError: false,
        content: [
          { type: 'text', text: 'pages' },
          {
            type: 'resource',
            resource: { uri: 'workspace:///docs/a.pdf', mimeType: 'application/pdf', blob: 'JVBERg==' },
          },
          { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'workspace:///data/x.png', name: 'x.png', mimeType: 'image/png' },
        ],
      }),
    ).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: 'pages' },
        { type: 'file-data', data: 'JVBERg==', mediaType: 'application/pdf', filename: 'a.pdf' },
        { type: 'file-data', data: 'UklGRg==', mediaType: 'audio/wav' },
        { type: 'text', text: '[x.png](workspace:///data/x.png) image/png' },
      ],
    });
    expect(
      toAiSdkToolOutput({
        isError: false,
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toEqual({
      type: 'text',
      value: 'a\nb',
    });
    expect(toAiSdkToolOutput({ isError: true, content: [] })).toEqual({
      type: 'error-text',
      value: 'The tool call failed.',
    });
    expect(
      toAiSdkToolOutput({
        isError: true,
        content: [
          { type: 'text', text: 'bad' },
          { type: 'image', data: 'AA==', mimeType: 'image/png' },
        ],
      }),
    ).toEqual({ type: 'error-text', value: 'bad\n[image image/png]' });
  });
});
