import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, run, user } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { stdioSpec, uploadMcpFixtures } from '@ws/contract-tests';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStrictSchema, openAiAgentTools, toOpenAiAgentTool } from '../src/index.js';
import {
  customDataOf,
  outputsByCall,
  outputText,
  PIXEL_BASE64,
  PIXEL_DATA_URL,
  recordingTool,
} from './helpers.js';

const base = mkdtempSync(join(tmpdir(), 'ws-openai-agents-'));
const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });
let workdir = '';

beforeAll(async () => {
  await workspace.initialize();
  workdir = workspace.getSandbox().workdir;
  await uploadMcpFixtures(workspace.getSandbox(), workdir);
  await workspace.addMcp(stdioSpec('helper'), { agentId: 'coder', sessionId: 's1' });
  const skillDir = join(base, 'greeting');
  mkdirSync(skillDir, { recursive: true });
  writeFileSync(
    join(skillDir, 'SKILL.md'),
    '---\nname: greeting\ndescription: Says hello properly.\n---\nAlways greet by name.\n',
  );
  await workspace.addSkill(skillDir, { agentId: 'coder' });
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

type Schema = { properties: Record<string, Record<string, unknown>>; required: string[] };

describe('openAiAgentTools', () => {
  it('gives every built-in, MCP and Skill tool in strict mode, with the instructions', async () => {
    const { tools, instructions, skills } = await openAiAgentTools(workspace, {
      agentId: 'coder',
      sessionId: 's1',
    });
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep']));
    expect(names).toContain('mcp__helper__echo');
    expect(names.at(-1)).toBe('Skill');
    expect(skills.map((skill) => skill.name)).toEqual(['greeting']);
    expect(instructions.startsWith(workspace.getInstructions())).toBe(true);
    expect(instructions).toContain('- greeting: Says hello properly.');
    for (const tool of tools) {
      expect({ name: tool.name, strict: tool.strict }).toEqual({ name: tool.name, strict: true });
      expect(isStrictSchema(tool.parameters)).toBe(true);
    }
    // Bash's optional `timeout` is required and nullable now; its constraints stay in the branch.
    const bash = tools.find((tool) => tool.name === 'Bash')!.parameters as unknown as Schema;
    expect(bash.required.sort()).toEqual(['command', 'description', 'timeout']);
    expect(bash.properties.timeout?.anyOf).toEqual([
      expect.objectContaining({ type: 'integer', minimum: 0 }),
      { type: 'null' },
    ]);
    expect(bash.properties.command).toEqual(expect.objectContaining({ type: 'string' }));
  });

  it('is what the SDK sends the model, and the nulls the model sends back never reach the tool', async () => {
    const nested = recordingTool('Nested', {
      type: 'object',
      properties: {
        name: { type: 'string' },
        count: { type: 'integer', minimum: 1 },
        options: {
          type: 'object',
          properties: { deep: { type: 'boolean' }, label: { type: 'string' } },
          required: ['deep'],
          additionalProperties: false,
        },
      },
      required: ['name'],
      additionalProperties: false,
    });
    const model = new ScriptedModel([
      [
        functionCall(
          'Nested',
          { name: 'a', count: null, options: { deep: true, label: null } },
          { callId: 'c1' },
        ),
      ],
      [functionCall('Nested', { name: 'b', count: 2, options: null }, { callId: 'c2' })],
      [assistantMessage('done')],
    ]);
    const agent = new Agent({ name: 'probe', tools: [toOpenAiAgentTool(nested)], model });
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    expect(nested.inputs).toEqual([
      { name: 'a', options: { deep: true } },
      { name: 'b', count: 2 },
    ]);
    const sent = model.firstCall?.request.tools[0] as { strict: boolean; parameters: Schema } | undefined;
    expect(sent?.strict).toBe(true);
    expect(sent?.parameters.required.sort()).toEqual(['count', 'name', 'options']);
    expect(sent?.parameters.properties.options?.anyOf).toEqual([
      {
        type: 'object',
        properties: {
          deep: { type: 'boolean' },
          label: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        },
        required: ['deep', 'label'],
        additionalProperties: false,
      },
      { type: 'null' },
    ]);
  });

  it('sends the schemas as they are with strict: false, and the SDK runs them', async () => {
    const { tools } = await openAiAgentTools(workspace, { agentId: 'coder', strict: false });
    const listed = await workspace.listTools({ agentId: 'coder' });
    for (const tool of listed) {
      const converted = tools.find((candidate) => candidate.name === tool.name)!;
      expect(converted.strict).toBe(false);
      expect(converted.parameters).toEqual(tool.inputSchema);
    }
    const file = join(workdir, 'plain.txt');
    const model = new ScriptedModel([
      [functionCall('Write', { file_path: file, content: 'one\n' }, { callId: 'w' })],
      [functionCall('Read', { file_path: file }, { callId: 'r' })],
      [assistantMessage('read it')],
    ]);
    const result = await run(new Agent({ name: 'loose', tools, model }), 'go');
    expect(model.firstCall?.request.tools.every((tool) => 'strict' in tool && tool.strict === false)).toBe(
      true,
    );
    expect(outputText(outputsByCall(result.history).get('r'))).toContain('1\tone');
  });

  it('sends on its own non-strict a tool whose schema strict mode cannot take', async () => {
    const open = recordingTool('Env', {
      type: 'object',
      properties: { vars: { type: 'object', additionalProperties: { type: 'string' } } },
      required: ['vars'],
    });
    const choice = recordingTool('Choice', {
      type: 'object',
      properties: { value: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
    });
    const fine = recordingTool('Fine', { type: 'object', properties: { x: { type: 'string' } } });
    const [env, pick, plain] = [open, choice, fine].map((tool) => toOpenAiAgentTool(tool));
    expect([env?.strict, pick?.strict, plain?.strict]).toEqual([false, false, true]);
    expect(env?.parameters).toEqual(open.inputSchema);
    const model = new ScriptedModel([
      [functionCall('Env', { vars: { A: '1' } }, { callId: 'e' })],
      [assistantMessage('ok')],
    ]);
    await run(new Agent({ name: 'mixed', tools: [env!, pick!, plain!], model }), 'go');
    expect(open.inputs).toEqual([{ vars: { A: '1' } }]);
  });

  it('maps results: text, images as images, failures as errors, metadata as custom data', async () => {
    const { tools } = await openAiAgentTools(workspace, { agentId: 'coder', sessionId: 's1' });
    const text = join(workdir, 'notes.txt');
    const image = join(workdir, 'pixel.png');
    writeFileSync(join(base, 'work', 'pixel.png'), Buffer.from(PIXEL_BASE64, 'base64'));
    const model = new ScriptedModel([
      [functionCall('Write', { file_path: text, content: 'alpha\nbeta\n' }, { callId: 'write' })],
      [functionCall('Read', { file_path: text }, { callId: 'read' })],
      [
        functionCall(
          'Edit',
          { file_path: text, old_string: 'beta', new_string: 'gamma' },
          { callId: 'edit' },
        ),
      ],
      [functionCall('Read', { file_path: image }, { callId: 'image' })],
      [functionCall('Read', { file_path: join(workdir, 'missing.txt') }, { callId: 'missing' })],
      [functionCall('mcp__helper__echo', { text: 'hi there' }, { callId: 'echo' })],
      [functionCall('mcp__helper__pixel', {}, { callId: 'pixel' })],
      [functionCall('mcp__helper__fail', {}, { callId: 'fail' })],
      [functionCall('Skill', { name: 'greeting' }, { callId: 'skill' })],
      [assistantMessage('all done')],
    ]);
    const result = await run(new Agent({ name: 'mapper', tools, model }), [user('go')]);
    expect(result.finalOutput).toBe('all done');
    expect(readFileSync(join(base, 'work', 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n');
    const outputs = outputsByCall(result.history);

    expect(outputText(outputs.get('read'))).toContain('2\tbeta');
    expect(outputs.get('image')).toEqual([{ type: 'input_image', image: PIXEL_DATA_URL }]);
    expect(outputs.get('pixel')).toEqual([{ type: 'input_image', image: PIXEL_DATA_URL }]);
    expect(outputText(outputs.get('echo'))).toContain('hi there');
    expect(outputText(outputs.get('skill'))).toContain('Always greet by name.');

    expect(outputText(outputs.get('missing'))).toMatch(/^Error: File does not exist/);
    // The MCP server's failure does not say "error"; the model is told all the same.
    expect(outputText(outputs.get('fail'))).toBe('Error: failed on purpose');
    expect(customDataOf(result.newItems, 'missing')).toEqual({ isError: true });
    expect(customDataOf(result.newItems, 'fail')).toMatchObject({ isError: true });
    expect(customDataOf(result.newItems, 'read')).toMatchObject({ isError: false });
    const edit = customDataOf(result.newItems, 'edit');
    expect(edit?.isError).toBe(false);
    expect(String((edit?.metadata as Record<string, unknown> | undefined)?.diff)).toContain('+gamma');
  });
});
